//===- FaultInjection.cpp - Test-only faults in the training loop ---------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "FaultInjection.h"

#include <csignal>
#include <cstdlib>

using namespace infir2::rt;

namespace {

class KillRankAtStep : public StepHook {
public:
  KillRankAtStep(int rank, int64_t step) : rank_(rank), step_(step) {}
  void beforeStep(int rank, int64_t step) override {
    if (rank == rank_ && step == step_)
      std::raise(SIGKILL);
  }

private:
  int rank_;
  int64_t step_;
};

} // namespace

std::unique_ptr<StepHook> test_hooks::faultInjectionFromEnvironment() {
  const char *rank = std::getenv("INFIR2_TEST_KILL_RANK");
  const char *step = std::getenv("INFIR2_TEST_KILL_STEP");
  if (!rank || !step)
    return nullptr;
  return std::make_unique<KillRankAtStep>(std::atoi(rank), std::atoll(step));
}
