//===- Generator.h - --generate: text from the decode step ------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Generation with the decode step the compiler derived from the model, over
// a session whose weights are loaded (Generator.cpp says how).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_LOOP_GENERATOR_H
#define INFIR2_RUNTIME_DRIVER_LOOP_GENERATOR_H

#include "loop/Session.h"

namespace infir2::rt {

class Generator {
public:
  explicit Generator(Session &session) : s_(session) {}

  /// Generates from --prompt, printing the text as it comes.
  Status run();

private:
  Session &s_;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_LOOP_GENERATOR_H
