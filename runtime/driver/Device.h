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

#ifndef INFIR2_RUNTIME_DRIVER_DEVICE_H
#define INFIR2_RUNTIME_DRIVER_DEVICE_H

#include "infir2/runtime/Backend.h"

#include <cstdlib>
#include <string>
#include <vector>

namespace infir2::rt {

/// The GPU backend this trainer was built with, or null (Backends.cpp).
const infir2rt_backend *gpuBackend();

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

  /// Host copy -> regions (queued), regions -> host copy (waits), for
  /// `bytes` at `offset` of the state (nothing on the CPU). False with
  /// `error` on failure.
  bool upload(int64_t offset, int64_t bytes, std::string &error);
  bool download(int64_t offset, int64_t bytes, std::string &error);
  /// Zeroes state bytes where the step reads them (queued).
  bool zero(int64_t offset, int64_t bytes, std::string &error);
  /// Queues a copy of `bytes` state bytes at `offset` into the read-back
  /// buffer; `at` gets where collect() will put them.
  bool keep(int64_t offset, int64_t bytes, int64_t &at, std::string &error);
  /// Queues, into the read-back buffer, the count (an int64 at `at`) of
  /// the NaN or infinite values among `n` FP32 state values at `offset`.
  bool keepNonFiniteCount(int64_t offset, int64_t n, int64_t &at,
                          std::string &error);
  /// Waits for the queued work and brings what was kept to the host in
  /// one round trip: `out` holds it at the positions keep gave. A call the
  /// backend refused only now (a non-finite amax a GPU quantizer deferred
  /// to this round trip) is the caller's to weigh where `refused` is given
  /// ("where: message", empty if none), else a failure.
  bool collect(std::vector<uint8_t> &out, std::string &error,
               std::string *refused = nullptr);
  /// Waits for the step's queued work; asynchronous GPU failures surface
  /// here.
  bool finish(std::string &error);

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
    bool allocate(const infir2rt_backend *b, int64_t n, std::string &error);
    uint8_t *data() const { return static_cast<uint8_t *>(p); }
  };
  bool ok(int32_t rc, const char *why, std::string &error);
  /// collect without weighing refusals: one found is held in refusal_.
  bool fetch(std::vector<uint8_t> &out, std::string &error);
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
  /// there to the host first when full).
  bool reserve(int64_t bytes, int64_t &at, std::string &error);
  void *stream_ = nullptr;
  /// The host copy is the state region itself (host-memory backends).
  bool shared_ = true;
};

/// This process's index among the ranks on its node, from the launcher's
/// environment (Open MPI, MPICH, Slurm, torchrun), or 0.
int localRank();

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_DEVICE_H
