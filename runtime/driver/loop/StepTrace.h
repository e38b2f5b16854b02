//===- StepTrace.h - A run's dumps for external checks ----------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// --dump-step (the first step's weights, batch, loss and gradients) and
// --trace-optimizer (every optimizer step's gradients and the state it
// produced), written as FP32 safetensors for checks against the reference
// interpreter and PyTorch (test/python/).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_LOOP_STEPTRACE_H
#define INFIR2_RUNTIME_DRIVER_LOOP_STEPTRACE_H

#include "io/TensorDump.h"
#include "loop/Session.h"

namespace infir2::rt {

class StepTrace {
public:
  explicit StepTrace(Session &session) : s_(session) {}

  /// Writes the step just run to --dump-step.
  Status dumpStep();
  /// Starts --trace-optimizer: the state the first update starts from.
  Status openOptimizerTrace();
  /// Takes the gradients and the learning rate of the update about to run.
  Status traceGradients(double lr, double gradScale);
  /// Writes what the update of step `atStep` produced.
  Status writeOptimizerTrace(int64_t atStep);

private:
  Session &s_;
  TensorDump trace_; ///< --trace-optimizer's step in the making
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_LOOP_STEPTRACE_H
