//===- Schedule.cpp - The learning-rate schedule --------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "config/Schedule.h"

#include "config/Cli.h"

#include <algorithm>
#include <cmath>

using namespace infir2::rt;

Schedule Schedule::fromConfig(const RunConfig &o) {
  Schedule s;
  s.kind = o.schedule;
  s.peak = o.lr;
  s.minLrRatio = o.minLrRatio;
  s.steps = o.steps;
  s.warmup = o.warmup;
  s.decay = o.decay;
  return s;
}

double Schedule::at(int64_t step) const {
  double floor = peak * minLrRatio;
  if (step <= warmup)
    return peak * double(step) / double(std::max<int64_t>(warmup, 1));
  if (kind == LrSchedule::Constant)
    return peak;
  if (kind == LrSchedule::Cosine) {
    double t =
        double(step - warmup) / double(std::max<int64_t>(steps - warmup, 1));
    return floor + 0.5 * (peak - floor) * (1.0 + std::cos(M_PI * t));
  }
  int64_t decayStart = steps - decay; // wsd
  if (step <= decayStart)
    return peak;
  double t = double(step - decayStart) / double(std::max<int64_t>(decay, 1));
  return peak + (floor - peak) * t;
}
