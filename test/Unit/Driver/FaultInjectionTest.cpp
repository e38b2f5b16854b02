//===- FaultInjectionTest.cpp - Test-only faults in the training loop -----===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "testing/FaultInjection.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

using namespace infir2::rt;

TEST(FaultInjection, NoHookUnlessBothVariablesAreSet) {
  unsetenv("INFIR2_TEST_KILL_RANK");
  unsetenv("INFIR2_TEST_KILL_STEP");
  EXPECT_EQ(test_hooks::faultInjectionFromEnvironment(), nullptr);
  setenv("INFIR2_TEST_KILL_RANK", "1", 1);
  EXPECT_EQ(test_hooks::faultInjectionFromEnvironment(), nullptr);
  unsetenv("INFIR2_TEST_KILL_RANK");
}

TEST(FaultInjection, KillsOnlyThatRankAtThatStep) {
  setenv("INFIR2_TEST_KILL_RANK", "1", 1);
  setenv("INFIR2_TEST_KILL_STEP", "3", 1);
  std::unique_ptr<StepHook> hook = test_hooks::faultInjectionFromEnvironment();
  unsetenv("INFIR2_TEST_KILL_RANK");
  unsetenv("INFIR2_TEST_KILL_STEP");
  ASSERT_NE(hook, nullptr);
  hook->beforeStep(0, 3); // another rank
  hook->beforeStep(1, 2); // another step
  EXPECT_EXIT(hook->beforeStep(1, 3), ::testing::KilledBySignal(SIGKILL), "");
}
