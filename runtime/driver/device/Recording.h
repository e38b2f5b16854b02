//===- Recording.h - A backend that counts what is asked of it --*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The recording backend (Backend.h) wraps the backend a trainer opened and
// forwards everything to it, counting: each entry point's calls, by the
// step function that made them (train_step, optimizer_step, ...), and the
// host's round trips: `synchronize` and `download` (the calls after which
// the host has waited for the device), and uploads. `--record-calls FILE`
// turns it on; the trainer writes the counts per training step as JSON at
// the end, and tests assert them. On the CPU nothing waits, but the same
// calls are made, so the counts are those a GPU run makes, short of the
// synchronizations inside the CUDA backend's own entry points
// (runtime/lib/cuda/host-syncs.txt lists those, and a lint test holds them
// to the list).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_DEVICE_RECORDING_H
#define INFIR2_RUNTIME_DRIVER_DEVICE_RECORDING_H

#include "infir2/runtime/Backend.h"
#include "infir2/runtime/Expected.h"

#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace infir2::rt {

class CallRecorder {
public:
  /// Starts recording what is asked of `inner`; one recorder per process.
  explicit CallRecorder(const infir2rt_backend *inner);
  ~CallRecorder();
  CallRecorder(const CallRecorder &) = delete;
  CallRecorder &operator=(const CallRecorder &) = delete;

  /// The backend to run on instead of `inner`.
  const infir2rt_backend *backend() const { return &table_; }

  /// Which step function runs now (its calls are counted under its name),
  /// or "" for the trainer's own work between them.
  void enter(const std::string &function);
  /// The training loop's steps: counts between the first beginStep and the
  /// last endStep are reported per step.
  void beginStep();
  void endStep();

  /// Writes the counts of the recorded steps to `path` as JSON.
  Status write(const std::string &path) const;

  /// What was asked during the recorded steps.
  struct Counts {
    std::map<std::string, std::array<int64_t, INFIR2RT_NUM_ENTRIES>> calls;
    std::map<std::string, int64_t> invocations;
    int64_t synchronizations = 0, downloads = 0, uploads = 0;
  };

  // The recording table's functions reach the recorder here.
  static CallRecorder *current;
  const infir2rt_backend *inner;
  void countCall(int index);
  Counts live;

private:
  infir2rt_backend table_;
  std::string function_;
  bool stepping_ = false;
  int64_t steps_ = 0;
  Counts recorded_;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_DEVICE_RECORDING_H
