//===- CudaCheck.h - Status checks for the CUDA backend ---------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Every CUDA status is checked and turned into the runtime's error
// convention (non-zero return, the failure recorded in the context through
// Error.h); nothing aborts.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_CUDACHECK_H
#define INFIR2_RUNTIME_CUDA_CUDACHECK_H

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Error.h"

#include <cuda_runtime.h>

namespace infir2::rt::cuda {

/// Records `status` in the context, naming the call and the op; returns 0 on
/// success and 1 otherwise.
inline int32_t check(infir2rt_context *ctx, cudaError_t status,
                     const char *call, const char *where) {
  if (status == cudaSuccess)
    return 0;
  return setCallError(ctx, where, "%s failed: %s", call,
                      cudaGetErrorString(status));
}

} // namespace infir2::rt::cuda

#define INFIR2_CUDA_CHECK(ctx, expr, where)                                    \
  do {                                                                         \
    if (int32_t _rc = ::infir2::rt::cuda::check((ctx), (expr), #expr, where))  \
      return _rc;                                                              \
  } while (0)

namespace infir2::rt::cuda {

/// The stream a call's work goes on: the trainer's step stream, or the
/// default stream.
inline cudaStream_t streamOf(const infir2rt_context *ctx) {
  return static_cast<cudaStream_t>(ctx->stream);
}

/// After kernel launches: the launch status; on the default stream also the
/// work's (a step stream is synchronized, and its status checked, by the
/// trainer at the end of the step).
inline int32_t finishLaunch(infir2rt_context *ctx, const char *where) {
  INFIR2_CUDA_CHECK(ctx, cudaGetLastError(), where);
  if (!ctx->stream)
    INFIR2_CUDA_CHECK(ctx, cudaDeviceSynchronize(), where);
  return 0;
}

} // namespace infir2::rt::cuda

#endif // INFIR2_RUNTIME_CUDA_CUDACHECK_H
