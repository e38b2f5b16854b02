//===- Device.h - Where a trainer's steps run -------------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The memory a compiled step runs on, and the backend that runs it: the
// CPU (the state and the scratch arena in host memory), or a GPU (both in
// one cudaMalloc each, the calls forwarded to the CUDA backend, the step's
// work queued on one stream). The trainer keeps a host copy of the state
// for initialization, checkpoints and logging, and moves slots between it
// and the device explicitly; on the CPU those moves cost nothing.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_DEVICE_H
#define INFIR2_RUNTIME_DRIVER_DEVICE_H

#include "infir2/runtime/ABI.h"

#include <cstdlib>
#include <string>
#include <vector>

namespace infir2::rt {

class Device {
public:
  Device() = default;
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;
  ~Device();

  /// Chooses the backend for `--device` (auto, cuda or cpu) and allocates
  /// the regions. `notice` gets a line for the user when auto falls back to
  /// the CPU; false with `error` when the choice cannot be honoured.
  bool open(const std::string &choice, int localRank, int64_t stateBytes,
            int64_t scratchBytes, std::string &notice, std::string &error);

  bool onGpu() const { return gpu_; }
  /// On a GPU: the bytes in use on it now, and before the regions were
  /// allocated (the CUDA context and libraries); 0 on the CPU.
  int64_t bytesInUse() const;
  int64_t bytesInUseBeforeRegions() const { return inUseBeforeRegions_; }
  /// "the CPU", or "GPU 0 of 8: NVIDIA H100 80GB HBM3 (sm_90)".
  const std::string &name() const { return name_; }

  /// The host copy of the state region (the region itself on the CPU).
  uint8_t *state() { return state_.data(); }

  /// Points a context at the regions, the backend and the step stream.
  void attach(infir2rt_context &ctx);

  /// Host copy -> device, device -> host, for `bytes` at `offset` of the
  /// state (nothing on the CPU). False with `error` on failure.
  bool upload(int64_t offset, int64_t bytes, std::string &error);
  bool download(int64_t offset, int64_t bytes, std::string &error);
  /// Zeroes state bytes where the step reads them.
  bool zero(int64_t offset, int64_t bytes, std::string &error);
  /// How many of `n` FP32 state values at `offset` are NaN or infinite.
  bool countNonFinite(int64_t offset, int64_t n, int64_t &count,
                      std::string &error);
  /// Waits for the step's queued work; asynchronous GPU failures surface
  /// here.
  bool finish(std::string &error);

private:
  bool gpu_ = false;
  int64_t inUseBeforeRegions_ = 0;
  std::string name_ = "the CPU";
  /// Host memory for a region: anonymous pages (zero), with transparent huge
  /// pages, all faulted in once when allocated, by every thread, so that no
  /// step pays for page faults.
  struct HostRegion {
    uint8_t *p = nullptr;
    size_t size = 0;
    HostRegion() = default;
    HostRegion(const HostRegion &) = delete;
    HostRegion &operator=(const HostRegion &) = delete;
    ~HostRegion();
    uint8_t *data() const { return p; }
  };
  HostRegion state_, scratch_;
  uint8_t *deviceState_ = nullptr, *deviceScratch_ = nullptr;
  void *stream_ = nullptr;
};

/// This process's index among the ranks on its node, from the launcher's
/// environment (Open MPI, MPICH, Slurm, torchrun), or 0.
int localRank();

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_DEVICE_H
