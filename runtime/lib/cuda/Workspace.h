//===- Workspace.h - Device temporaries reused across calls -----*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The temporaries of one call (amax bits, partial sums, error flags, scale
// layouts, collective buckets) come from one device buffer per GPU (and host
// thread), reused from call to call, instead of a cudaMalloc and a cudaFree
// per call (the cudaFree waits for the whole device). A step's calls run one
// after another on its stream, and the backend's own copies on the default
// stream are ordered with it, so one call's temporaries are dead when the next
// call's work starts. The buffer grows when a call needs more; the old one
// is freed then, and cudaFree waits for any work still using it.
//
// A call takes all its pieces at once: a second take in the same call would
// hand out the same memory again.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_WORKSPACE_H
#define INFIR2_RUNTIME_CUDA_WORKSPACE_H

#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>

namespace infir2::rt::cuda {

/// One piece of a call's temporaries: where its address goes, its size.
struct Piece {
  void *address; ///< a T** for the piece's T*
  int64_t bytes;
};

/// Points every piece at its part of this GPU's workspace (256-byte
/// aligned), growing the workspace first when it is too small.
inline cudaError_t takeWorkspace(std::initializer_list<Piece> pieces) {
  struct Buffer {
    uint8_t *ptr = nullptr;
    int64_t bytes = 0;
  };
  // By device index, and per host thread: a process's step runs on one
  // thread; a test running several ranks as threads on one GPU
  // (ThreadGroup.h) gives each its own, freed when the thread ends.
  struct Buffers {
    Buffer byDevice[64];
    ~Buffers() {
      for (Buffer &b : byDevice)
        if (b.ptr)
          cudaFree(b.ptr);
    }
  };
  thread_local Buffers buffers;
  int device = 0;
  if (cudaError_t st = cudaGetDevice(&device); st != cudaSuccess)
    return st;
  Buffer &b = buffers.byDevice[device % 64];
  auto padded = [](int64_t n) { return (n + 255) / 256 * 256; };
  int64_t total = 0;
  for (const Piece &p : pieces)
    total += padded(p.bytes);
  if (total > b.bytes) {
    cudaFree(b.ptr);
    b = Buffer{};
    if (cudaError_t st = cudaMalloc(&b.ptr, size_t(total)); st != cudaSuccess)
      return st;
    b.bytes = total;
  }
  int64_t at = 0;
  for (const Piece &p : pieces) {
    *static_cast<void **>(p.address) = b.ptr + at;
    at += padded(p.bytes);
  }
  return cudaSuccess;
}

} // namespace infir2::rt::cuda

#endif // INFIR2_RUNTIME_CUDA_WORKSPACE_H
