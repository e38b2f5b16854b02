//===- Backend.h - Where compiled steps run ---------------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// A backend is one table: every entry point of ABI.def, and what a trainer
// needs around them (memory for the regions, copies between them and the
// host, zeroing, a stream, waiting for it). The CPU and CUDA backends are
// peers: the dispatcher (each infir2rt_<name>, runtime/lib/Dispatch.cpp)
// runs the context's backend's entry and knows no backend by name, and the
// trainer holds a backend without asking which it is. A recording backend
// (runtime/driver/device/Recording.h) wraps another and counts what a step asks
// of it.
//
// Every function returns 0, or non-zero with a message in `why`. Copies,
// zeroing and counting are queued on `stream` (null: the default stream)
// and return before the work is done, except `download`, which waits for
// it: the one way a host reads the regions, so the one place a host
// synchronization can hide besides `synchronize`.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_BACKEND_H
#define INFIR2_RUNTIME_BACKEND_H

#include "infir2/runtime/ABI.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct infir2rt_backend {
  /// "cpu", "cuda", "recording".
  const char *name;
  /// Every entry point of ABI.def, at its INFIR2RT_ENTRY_<name> index.
  infir2rt_entry_fn entries[INFIR2RT_NUM_ENTRIES];
  /// Non-zero when the regions are host memory the trainer reads and writes
  /// in place (no host copy; upload and download do nothing).
  int32_t host_memory;
  /// Makes the backend's device current for this process, one per rank on a
  /// node (`local_rank`); `why` gets its name ("GPU 0 of 8: ..."), or why
  /// it is unusable.
  int32_t (*open)(int32_t local_rank, char *why, int64_t why_size);
  /// `bytes` of zeroed memory; freed by `release` with the same size.
  int32_t (*allocate)(void **ptr, int64_t bytes, char *why, int64_t why_size);
  void (*release)(void *ptr, int64_t bytes);
  /// Host memory to the regions; the host bytes may change once it returns.
  int32_t (*upload)(void *dst, const void *src, int64_t bytes, void *stream,
                    char *why, int64_t why_size);
  /// The regions to host memory: returns when the bytes are there (it waits
  /// for everything queued before it on `stream`). INFIR2RT_NONFINITE, the
  /// bytes there and "where: message" in `why`, when a call queued before
  /// refused a non-finite value it reports only here (a GPU's quantizers).
  int32_t (*download)(void *dst, const void *src, int64_t bytes, void *stream,
                      char *why, int64_t why_size);
  /// Zeroes region bytes.
  int32_t (*zero)(void *ptr, int64_t bytes, void *stream, char *why,
                  int64_t why_size);
  /// Copies region bytes to other region bytes.
  int32_t (*copy)(void *dst, const void *src, int64_t bytes, void *stream,
                  char *why, int64_t why_size);
  /// Writes to `*count` (region memory, an int64) how many of the `n`
  /// floats at `data` are NaN or infinite.
  int32_t (*count_nonfinite)(const float *data, int64_t n, int64_t *count,
                             void *stream, char *why, int64_t why_size);
  int32_t (*stream_create)(void **stream, char *why, int64_t why_size);
  void (*stream_destroy)(void *stream);
  /// Waits for the work queued on `stream`: where asynchronous failures
  /// surface, deferred refusals too (INFIR2RT_NONFINITE, as `download`).
  int32_t (*synchronize)(void *stream, char *why, int64_t why_size);
  /// Bytes in use on the device (0 where not known, or host memory).
  int64_t (*memory_in_use)(void);
  /// INFIR2_PROFILE=gpu (the dispatcher): entry `entry` starts now on
  /// `stream`; the backend times the stream from mark to mark without
  /// waiting and prints each entry's time at exit. Null where it cannot.
  void (*mark)(void *stream, int32_t entry);
  /// The FP8 GEMM scalings the opened device runs (INFIR2RT_FP8_GEMM_*
  /// bits): a GPU runs its generation's, the CPU emulates all. Null: all.
  uint32_t (*fp8_gemms)(void);
} infir2rt_backend;

/// FP8 GEMM kinds a device may lack (per-tensor scales run anywhere):
/// 128-wide block scales (1x128 groups, 128x128 blocks: Hopper's), MX
/// blocks of 32 with E8M0 scales (Blackwell's MXFP8), and both operands in
/// E5M2 (the recipe option e5m2), which cuBLASLt has no kernel for.
enum {
  INFIR2RT_FP8_GEMM_BLOCK128 = 1,
  INFIR2RT_FP8_GEMM_MX = 2,
  INFIR2RT_FP8_GEMM_E5M2_PAIR = 4
};

/// The CPU backend (runtime/lib/cpu): always there.
const infir2rt_backend *infir2rt_cpu_backend(void);

#ifdef __cplusplus
}
#endif

#endif // INFIR2_RUNTIME_BACKEND_H
