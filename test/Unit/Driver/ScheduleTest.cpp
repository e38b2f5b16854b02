//===- ScheduleTest.cpp - The learning-rate schedule ----------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Values computed by hand: peak 1e-3, floor 1e-4 (min-lr-ratio 0.1).
//
//===----------------------------------------------------------------------===//

#include "config/Schedule.h"

#include "config/Cli.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace infir2::rt;

namespace {
Schedule make(LrSchedule kind, int64_t steps, int64_t warmup, int64_t decay) {
  Schedule s;
  s.kind = kind;
  s.peak = 1e-3;
  s.minLrRatio = 0.1;
  s.steps = steps;
  s.warmup = warmup;
  s.decay = decay;
  return s;
}
} // namespace

TEST(Schedule, LinearWarmup) {
  Schedule s = make(LrSchedule::Cosine, 110, 10, 0);
  EXPECT_DOUBLE_EQ(s.at(1), 1e-4);
  EXPECT_DOUBLE_EQ(s.at(5), 5e-4);
  EXPECT_DOUBLE_EQ(s.at(10), 1e-3);
}

TEST(Schedule, CosineFromPeakToFloor) {
  Schedule s = make(LrSchedule::Cosine, 110, 10, 0);
  // t = (step - 10) / 100; lr = 1e-4 + 0.5 * 9e-4 * (1 + cos(pi t)).
  EXPECT_DOUBLE_EQ(s.at(60), 1e-4 + 0.5 * 9e-4); // t = 1/2
  EXPECT_NEAR(s.at(35), 1e-4 + 0.5 * 9e-4 * (1 + std::sqrt(0.5)), 1e-15);
  EXPECT_NEAR(s.at(110), 1e-4, 1e-15); // t = 1: the floor
}

TEST(Schedule, WarmupStableDecay) {
  Schedule s = make(LrSchedule::Wsd, 100, 0, 20);
  EXPECT_DOUBLE_EQ(s.at(1), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(80), 1e-3); // the decay starts after step 80
  EXPECT_DOUBLE_EQ(s.at(90), 1e-3 + (1e-4 - 1e-3) * 0.5);
  EXPECT_DOUBLE_EQ(s.at(100), 1e-4);
}

TEST(Schedule, Constant) {
  Schedule s = make(LrSchedule::Constant, 100, 4, 0);
  EXPECT_DOUBLE_EQ(s.at(2), 5e-4);
  EXPECT_DOUBLE_EQ(s.at(50), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(100), 1e-3);
}

TEST(Schedule, FromTheRunConfig) {
  RunConfig o;
  o.schedule = LrSchedule::Wsd;
  o.lr = 2e-3;
  o.minLrRatio = 0.5;
  o.steps = 10;
  o.warmup = 0;
  o.decay = 2;
  Schedule s = Schedule::fromConfig(o);
  EXPECT_DOUBLE_EQ(s.at(8), 2e-3);
  EXPECT_DOUBLE_EQ(s.at(10), 1e-3);
}
