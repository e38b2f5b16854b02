//===- trainer-state.cpp - Fuzzes the trainer_state.json reader -----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The input is a checkpoint's trainer_state.json. A state the reader
// accepts is used as Checkpoints::load uses it (the generator restored
// from its stream form), and must survive writing and reading back
// unchanged.
//
//===----------------------------------------------------------------------===//

#include "io/CheckpointIO.h"

#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>

using namespace infir2::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  Expected<TrainerState> state = parseTrainerState(text, "trainer_state.json");
  if (!state)
    return 0;
  std::mt19937_64 rng;
  std::istringstream(state->rng) >> rng;
  Expected<TrainerState> again =
      parseTrainerState(toJson(*state), "trainer_state.json");
  if (!again || again->step != state->step ||
      again->updates != state->updates ||
      again->dataPosition != state->dataPosition || again->rng != state->rng) {
    std::fprintf(stderr, "trainer-state: the state does not read back\n");
    std::abort();
  }
  return 0;
}
