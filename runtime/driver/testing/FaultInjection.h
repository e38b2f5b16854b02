//===- FaultInjection.h - Test-only faults in the training loop -*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Only in trainers linked for tests (the infir2rt_driver_testhooks library,
// main compiled with INFIR2_TRAINER_TEST_HOOKS): a StepHook that kills
// rank INFIR2_TEST_KILL_RANK with SIGKILL at step INFIR2_TEST_KILL_STEP, so
// that the data-parallel test can check that a dying rank takes the job
// down. Production trainers hold none of this.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_TESTING_FAULTINJECTION_H
#define INFIR2_RUNTIME_DRIVER_TESTING_FAULTINJECTION_H

#include "loop/Trainer.h"

#include <memory>

namespace infir2::rt::test_hooks {

/// The hook the environment asks for, or null when it asks for none.
std::unique_ptr<StepHook> faultInjectionFromEnvironment();

} // namespace infir2::rt::test_hooks

#endif // INFIR2_RUNTIME_DRIVER_TESTING_FAULTINJECTION_H
