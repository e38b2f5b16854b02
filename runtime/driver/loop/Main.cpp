//===- Main.cpp - main() of every compiled InfiR2 trainer -----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// infir2-compile links this with the compiled model object. It reads the
// model's manifest, the command line, joins the data-parallel group and
// runs the Trainer; the units return errors, and only here does a trainer
// print one ("trainer: error: ...", naming the rank when there are several)
// and exit with code 1.
//
//===----------------------------------------------------------------------===//

#include "config/Cli.h"
#include "dist/Communicator.h"
#include "loop/Trainer.h"

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Manifest.h"

#ifdef INFIR2_TRAINER_TEST_HOOKS
#include "testing/FaultInjection.h"
#endif

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

// A model compiled without a decode step (decode-length=0, or a model the
// compiler cannot decode) does not define it: the trainer then says so when
// asked to --generate, instead of failing to link.
#pragma weak infir2_decode_step
// Likewise the FP8 weight cache's fill: a BF16 model has no cache.
#pragma weak infir2_quantize_weights

using namespace infir2::rt;

namespace {

/// This process's rank in a data-parallel run, or -1 when alone.
int gRank = -1;

[[noreturn]] void die(const std::string &message) {
  if (gRank >= 0)
    std::fprintf(stderr, "trainer (rank %d): error: %s\n", gRank,
                 message.c_str());
  else
    std::fprintf(stderr, "trainer: error: %s\n", message.c_str());
  std::exit(1);
}

} // namespace

int main(int argc, char **argv) {
  // A file-size limit (RLIMIT_FSIZE) then fails the write with EFBIG, like a
  // full disk, and the save reports it and cleans up, instead of the process
  // being killed mid-checkpoint.
  std::signal(SIGXFSZ, SIG_IGN);
  std::string error;
  std::optional<Manifest> manifest =
      parseManifest(infir2_model_manifest, error);
  if (!manifest)
    die(error);
  if (!manifest->batch || !manifest->seq || !manifest->vocab)
    die("the compiled model's manifest is incomplete");
  Communicator comm;
  if (Status joined = comm.init(&argc, &argv); !joined)
    die(joined.message());
  if (comm.size() > 1)
    gRank = comm.rank();
  Expected<CommandLine> cl = parseCommandLine(argc, argv, *manifest);
  if (!cl)
    die(cl.message());
  if (cl->help) {
    std::fputs(cl->helpText.c_str(), stdout);
    comm.finalize();
    return 0;
  }
  // The effective configuration, file and flags merged, on one line of
  // standard error (standard output is the training log).
  if (comm.rank() == 0)
    std::fprintf(stderr, "trainer: config: %s\n", toJson(cl->config).c_str());
  std::unique_ptr<StepHook> hook;
#ifdef INFIR2_TRAINER_TEST_HOOKS
  hook = test_hooks::faultInjectionFromEnvironment();
#endif
  Trainer trainer(std::move(*manifest), cl->config,
                  {infir2_train_step, infir2_optimizer_step, infir2_eval_step,
                   infir2_decode_step, infir2_quantize_weights},
                  comm, hook.get());
  std::string notice;
  Status opened = trainer.open(notice);
  if (!notice.empty())
    std::fprintf(stderr, "trainer%s: %s\n",
                 comm.size() > 1
                     ? (" (rank " + std::to_string(comm.rank()) + ")").c_str()
                     : "",
                 notice.c_str());
  if (!opened)
    die(opened.message());
  if (Status s = trainer.run(); !s)
    die(s.message());
  comm.finalize();
  // Stopped by SIGINT or SIGTERM (after saving): 128 + the signal, as a
  // shell reports a command the signal ended.
  return trainer.stoppedBy() ? 128 + trainer.stoppedBy() : 0;
}
