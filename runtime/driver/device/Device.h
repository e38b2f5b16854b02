//===- Device.h - Where a trainer's steps run -------------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The memory a compiled step runs on, and the backend that runs it
// (Backend.h): the CPU (the state and the scratch arena in host memory), or
// a GPU (both in its memory, the step's work queued on one stream). The
// trainer keeps a host copy of the state for initialization, checkpoints
// and logging, and moves slots between it and the backend's regions
// explicitly; where the regions are host memory those moves cost nothing.
// The device never names a backend: it asks the one it holds.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_DEVICE_DEVICE_H
#define INFIR2_RUNTIME_DRIVER_DEVICE_DEVICE_H

#include "device/DeviceChoice.h"

#include "infir2/runtime/Backend.h"
#include "infir2/runtime/Expected.h"

#include <cstdlib>
#include <string>
#include <vector>

namespace infir2::rt {

/// The GPU backend this trainer was built with, or null (Backends.cpp).
const infir2rt_backend *gpuBackend();

/// What a device lacks of the FP8 GEMM scalings `need` (INFIR2RT_FP8_GEMM_*
/// bits, the manifest's fp8_gemms) when it has `have`, in words naming the
/// granularity each is and the GPUs that have it; empty when nothing.
std::string missingFp8Gemms(uint32_t need, uint32_t have);

class Device {
public:
  Device() = default;
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;
  ~Device();

  /// Chooses the backend for `--device` and allocates the regions: a GPU
  /// only if it runs the FP8 GEMM scalings `fp8Gemms` (the manifest's).
  /// `notice` gets a line for the user when auto falls back to the CPU; a
  /// failure when the choice cannot be honoured or the regions not held.
  Status open(DeviceChoice choice, int localRank, int64_t stateBytes,
              int64_t scratchBytes, uint32_t fp8Gemms, std::string &notice);
  /// Runs every later call through `backend` instead (a recording backend
  /// over the one opened; same regions and stream).
  void wrap(const infir2rt_backend *backend) { backend_ = backend; }
  const infir2rt_backend *backend() const { return backend_; }

  bool onGpu() const { return !backend_->host_memory; }
  /// On a GPU: the bytes in use on it now, and before the regions were
  /// allocated (the CUDA context and libraries); 0 on the CPU.
  int64_t bytesInUse() const { return backend_->memory_in_use(); }
  int64_t bytesInUseBeforeRegions() const { return inUseBeforeRegions_; }
  /// "the CPU", or "GPU 0 of 8: NVIDIA H100 80GB HBM3 (sm_90)".
  const std::string &name() const { return name_; }

  /// The host copy of the state region (the region itself on the CPU).
  uint8_t *state() { return static_cast<uint8_t *>(hostState_.p); }

  /// Points a context at the regions, the backend and the step stream.
  void attach(infir2rt_context &ctx);

  // Each call below fails with the backend's message, which the caller
  // places (the device's name, the step, the call).

  /// Host copy -> regions (queued), regions -> host copy (waits), for
  /// `bytes` at `offset` of the state (nothing on the CPU).
  Status upload(int64_t offset, int64_t bytes);
  Status download(int64_t offset, int64_t bytes);
  /// Zeroes state bytes where the step reads them (queued).
  Status zero(int64_t offset, int64_t bytes);
  /// Queues a copy of `bytes` state bytes at `offset` into the read-back
  /// buffer; gives where collect() will put them.
  Expected<int64_t> keep(int64_t offset, int64_t bytes);
  /// Queues, into the read-back buffer, the count (an int64, at the
  /// position given) of the NaN or infinite values among `n` FP32 state
  /// values at `offset`.
  Expected<int64_t> keepNonFiniteCount(int64_t offset, int64_t n);
  /// Waits for the queued work and brings what was kept to the host in
  /// one round trip: `out` holds it at the positions keep gave. A call the
  /// backend refused only now (a non-finite amax a GPU quantizer deferred
  /// to this round trip) is the caller's to weigh where `refused` is given
  /// ("where: message", empty if none), else a failure.
  Status collect(std::vector<uint8_t> &out, std::string *refused = nullptr);
  /// Waits for the step's queued work; asynchronous GPU failures surface
  /// here.
  Status finish();

private:
  /// Memory from a backend, given back to it.
  struct Region {
    const infir2rt_backend *owner = nullptr;
    void *p = nullptr;
    int64_t bytes = 0;
    Region() = default;
    Region(const Region &) = delete;
    Region &operator=(const Region &) = delete;
    ~Region() {
      if (p)
        owner->release(p, bytes);
    }
    Status allocate(const infir2rt_backend *b, int64_t n);
    uint8_t *data() const { return static_cast<uint8_t *>(p); }
  };
  /// collect without weighing refusals: one found is held in refusal_.
  Status fetch(std::vector<uint8_t> &out);
  /// The earliest refusal a read-back found since the last collect.
  std::string refusal_;
  /// The state region: the host copy itself where the backend's regions
  /// are host memory.
  uint8_t *region() { return shared_ ? hostState_.data() : state_.data(); }

  const infir2rt_backend *backend_ = infir2rt_cpu_backend();
  int64_t inUseBeforeRegions_ = 0;
  std::string name_ = "the CPU";
  // Declared before the regions: destroyed after them.
  Region hostState_, state_, scratch_, readBack_;
  /// Bytes of readBack_ queued since the last collect(), and what earlier
  /// read-backs of a full buffer brought.
  int64_t kept_ = 0;
  std::vector<uint8_t> collected_;
  /// Room in readBack_ for `bytes` at 8-byte alignment (brings what is
  /// there to the host first when full): where collect() will put them.
  Expected<int64_t> reserve(int64_t bytes);
  void *stream_ = nullptr;
  /// The host copy is the state region itself (host-memory backends).
  bool shared_ = true;
};

/// This process's index among the ranks on its node, from the launcher's
/// environment (Open MPI, MPICH, Slurm, torchrun), or 0.
int localRank();

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_DEVICE_DEVICE_H
