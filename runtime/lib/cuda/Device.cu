//===- Device.cu - Devices, memory and streams for the trainer ------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "CublasLtLoader.h"
#include "Deferred.h"
#include "Profile.h"
#include "Workspace.h"
#include "infir2/runtime/Backend.h"
#include "infir2/runtime/CUDA.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>

namespace {

/// Writes "what: CUDA's message" into `why` when `status` is an error.
int32_t failed(cudaError_t status, const char *what, char *why,
               int64_t whySize) {
  if (status == cudaSuccess)
    return 0;
  std::snprintf(why, size_t(whySize), "%s: %s", what,
                cudaGetErrorString(status));
  return 1;
}

__global__ void countNonFiniteKernel(const float *x, int64_t n,
                                     unsigned long long *count) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n && !isfinite(x[i]))
    atomicAdd(count, 1ull);
}

} // namespace

extern "C" int32_t infir2rt_cuda_probe(int32_t *major, int32_t *minor,
                                       char *why, int64_t why_size) {
  int count = 0;
  // Without a driver this returns an error (not 0 devices): either way there
  // is no GPU to use.
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    std::snprintf(why, size_t(why_size), "no usable GPU: %s",
                  cudaGetErrorString(status));
    return 1;
  }
  if (count == 0) {
    std::snprintf(why, size_t(why_size), "no usable GPU: no CUDA device");
    return 1;
  }
  cudaDeviceProp prop;
  status = cudaGetDeviceProperties(&prop, 0);
  if (status != cudaSuccess) {
    std::snprintf(why, size_t(why_size), "no usable GPU: %s",
                  cudaGetErrorString(status));
    return 1;
  }
  *major = prop.major;
  *minor = prop.minor;
  std::snprintf(why, size_t(why_size), "%s (sm_%d%d)", prop.name, prop.major,
                prop.minor);
  return 0;
}

extern "C" int32_t infir2rt_cuda_select(int32_t local_rank, int32_t *device,
                                        int32_t *major, int32_t *minor,
                                        char *why, int64_t why_size) {
  int count = 0;
  if (failed(cudaGetDeviceCount(&count), "no usable GPU", why, why_size))
    return 1;
  if (count == 0) {
    std::snprintf(why, size_t(why_size), "no usable GPU: no CUDA device");
    return 1;
  }
  *device = local_rank % count;
  cudaDeviceProp prop;
  if (failed(cudaSetDevice(*device), "cudaSetDevice", why, why_size) ||
      failed(cudaGetDeviceProperties(&prop, *device), "cudaGetDeviceProperties",
             why, why_size))
    return 1;
  *major = prop.major;
  *minor = prop.minor;
  int n = std::snprintf(why, size_t(why_size), "GPU %d of %d: %s (sm_%d%d)",
                        *device, count, prop.name, prop.major, prop.minor);
  // The kernels are built for sm_90a and sm_100a (runtime/CMakeLists.txt),
  // whose code runs on compute capability 9.0 and 10.0 only. Which FP8
  // GEMMs a GPU has is checked where they run (ScaledMatmul.cu: 128-wide
  // blocks on Hopper, MXFP8 on Blackwell).
  if (!((prop.major == 9 || prop.major == 10) && prop.minor == 0)) {
    std::snprintf(why + n, size_t(why_size - n),
                  ": the CUDA backend is built for Hopper and Blackwell "
                  "(sm_90a and sm_100a: compute capability 9.0 or 10.0)");
    return 1;
  }
  if (const char *error = infir2::rt::cublasLtLoadError()) {
    if (n >= 0 && n < why_size)
      std::snprintf(why + n, size_t(why_size - n), ": %s", error);
    return 1;
  }
  return 0;
}

namespace {

// The backend's table (Backend.h) over the CUDA runtime.

int32_t open(int32_t localRank, char *why, int64_t whySize) {
  int32_t device = 0, major = 0, minor = 0;
  return infir2rt_cuda_select(localRank, &device, &major, &minor, why,
                              whySize);
}

int32_t allocate(void **ptr, int64_t bytes, char *why, int64_t whySize) {
  *ptr = nullptr;
  if (failed(cudaMalloc(ptr, size_t(bytes)), "cudaMalloc", why, whySize))
    return 1;
  return failed(cudaMemset(*ptr, 0, size_t(bytes)), "cudaMemset", why,
                whySize);
}

void release(void *ptr, int64_t) { cudaFree(ptr); }

cudaStream_t streamOf(void *stream) {
  return static_cast<cudaStream_t>(stream);
}

int32_t upload(void *dst, const void *src, int64_t bytes, void *stream,
               char *why, int64_t whySize) {
  // From pageable memory the copy is staged before this returns: the host
  // bytes may change, and the host does not wait for the device.
  return failed(cudaMemcpyAsync(dst, src, size_t(bytes),
                                cudaMemcpyHostToDevice, streamOf(stream)),
                "cudaMemcpyAsync", why, whySize);
}

/// The host waits for the stream: asynchronous failures surface, and so do
/// the quantizations' refusals the step deferred to this round trip
/// (Deferred.h): INFIR2RT_NONFINITE with the CPU backend's message.
int32_t waitFor(void *stream, char *why, int64_t whySize) {
  cudaStream_t s = streamOf(stream);
  cudaError_t queued = infir2::rt::cuda::queueRefusalRead(s);
  infir2::rt::cuda::closeMarks(s);
  cudaError_t done = cudaStreamSynchronize(s);
  infir2::rt::cuda::accountMarks(s);
  int32_t refused = infir2::rt::cuda::takeRefusal(s, why, whySize);
  if (failed(queued != cudaSuccess ? queued : done,
             "the step's GPU work failed", why, whySize))
    return 1;
  return refused;
}

int32_t download(void *dst, const void *src, int64_t bytes, void *stream,
                 char *why, int64_t whySize) {
  if (failed(cudaMemcpyAsync(dst, src, size_t(bytes), cudaMemcpyDeviceToHost,
                             streamOf(stream)),
             "cudaMemcpyAsync", why, whySize))
    return 1;
  return waitFor(stream, why, whySize);
}

int32_t zero(void *ptr, int64_t bytes, void *stream, char *why,
             int64_t whySize) {
  return failed(cudaMemsetAsync(ptr, 0, size_t(bytes), streamOf(stream)),
                "cudaMemsetAsync", why, whySize);
}

int32_t copy(void *dst, const void *src, int64_t bytes, void *stream,
             char *why, int64_t whySize) {
  return failed(cudaMemcpyAsync(dst, src, size_t(bytes),
                                cudaMemcpyDeviceToDevice, streamOf(stream)),
                "cudaMemcpyAsync", why, whySize);
}

int32_t countNonFinite(const float *data, int64_t n, int64_t *count,
                       void *stream, char *why, int64_t whySize) {
  auto *d = reinterpret_cast<unsigned long long *>(count);
  int32_t rc = failed(cudaMemsetAsync(d, 0, sizeof *d, streamOf(stream)),
                      "cudaMemsetAsync", why, whySize);
  if (!rc && n > 0) {
    countNonFiniteKernel<<<unsigned((n + 255) / 256), 256, 0,
                           streamOf(stream)>>>(data, n, d);
    rc = failed(cudaGetLastError(), "countNonFiniteKernel", why, whySize);
  }
  return rc;
}

int32_t streamCreate(void **stream, char *why, int64_t whySize) {
  // A blocking stream: copies on the default stream stay ordered with the
  // step's kernels.
  cudaStream_t s = nullptr;
  int32_t rc = failed(cudaStreamCreate(&s), "cudaStreamCreate", why, whySize);
  *stream = s;
  return rc;
}

void streamDestroy(void *stream) {
  infir2::rt::cuda::forgetRefusals(streamOf(stream));
  infir2::rt::cuda::forgetMarks(streamOf(stream));
  cudaStreamDestroy(streamOf(stream));
}

int32_t synchronize(void *stream, char *why, int64_t whySize) {
  return waitFor(stream, why, whySize);
}

int64_t memoryInUse() {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess)
    return 0;
  return int64_t(total - free);
}

/// The current GPU's FP8 GEMM scalings: Hopper's 128-wide block scales, or
/// Blackwell's MXFP8 (ScaleLayout.cu's requireArchitecture refuses the
/// other at the GEMM).
uint32_t fp8Gemms() {
  int device = 0, major = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                             device) != cudaSuccess)
    return 0;
  return major == 9    ? INFIR2RT_FP8_GEMM_BLOCK128
         : major >= 10 ? INFIR2RT_FP8_GEMM_MX
                       : 0;
}

const infir2rt_backend cudaBackend = {
    "cuda",
    {
#define INFIR2RT_ENTRY(name, operands, attributes, doc) &infir2rt_cuda_##name,
#include "infir2/runtime/ABI.def"
    },
    /*host_memory=*/0,
    open,
    allocate,
    release,
    upload,
    download,
    zero,
    copy,
    countNonFinite,
    streamCreate,
    streamDestroy,
    synchronize,
    memoryInUse,
    infir2::rt::cuda::markEntry,
    fp8Gemms,
};

} // namespace

extern "C" const infir2rt_backend *infir2rt_cuda_backend(void) {
  return &cudaBackend;
}
