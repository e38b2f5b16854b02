//===- Schedule.h - The learning-rate schedule ------------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Linear warmup to the peak, then: constant; cosine down to
// peak·min-lr-ratio at the last step; or warmup-stable-decay (wsd): the
// peak until `decay` steps before the end, then linear down to the floor.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_CONFIG_SCHEDULE_H
#define INFIR2_RUNTIME_DRIVER_CONFIG_SCHEDULE_H

#include "infir2/runtime/Choices.h"

#include <cstdint>

namespace infir2::rt {

struct RunConfig;

/// --schedule: the learning rate after warmup.
enum class LrSchedule { Wsd, Cosine, Constant };
template <> struct Choices<LrSchedule> {
  static constexpr const char *flag = "--schedule";
  static constexpr Spelling<LrSchedule> spellings[] = {
      {LrSchedule::Wsd, "wsd"},
      {LrSchedule::Cosine, "cosine"},
      {LrSchedule::Constant, "constant"}};
};

struct Schedule {
  LrSchedule kind = LrSchedule::Cosine;
  double peak = 1e-3, minLrRatio = 0.1;
  int64_t steps = 100, warmup = 0, decay = 0;

  static Schedule fromConfig(const RunConfig &config);

  /// The learning rate of optimizer step `step` (1-based).
  double at(int64_t step) const;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_CONFIG_SCHEDULE_H
