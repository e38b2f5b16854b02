//===- Device.cu - Devices, memory and streams for the trainer ------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "Workspace.h"
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
  // The kernels are built for sm_90a (runtime/CMakeLists.txt), whose code
  // runs on compute capability 9.0 only; block-scaled FP8 GEMMs need Hopper
  // anyway.
  if (prop.major != 9 || prop.minor != 0) {
    std::snprintf(why + n, size_t(why_size - n),
                  ": the CUDA backend is built for Hopper (sm_90a, compute "
                  "capability 9.0)");
    return 1;
  }
  return 0;
}

extern "C" int32_t infir2rt_cuda_malloc(void **ptr, int64_t bytes, char *why,
                                        int64_t why_size) {
  *ptr = nullptr;
  if (failed(cudaMalloc(ptr, size_t(bytes)), "cudaMalloc", why, why_size))
    return 1;
  return failed(cudaMemset(*ptr, 0, size_t(bytes)), "cudaMemset", why,
                why_size);
}

extern "C" void infir2rt_cuda_free(void *ptr) { cudaFree(ptr); }

extern "C" int32_t infir2rt_cuda_memcpy(void *dst, const void *src,
                                        int64_t bytes, int32_t to_device,
                                        char *why, int64_t why_size) {
  return failed(
      cudaMemcpy(dst, src, size_t(bytes),
                 to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost),
      "cudaMemcpy", why, why_size);
}

extern "C" int32_t infir2rt_cuda_zero(void *ptr, int64_t bytes, void *stream,
                                      char *why, int64_t why_size) {
  return failed(
      cudaMemsetAsync(ptr, 0, size_t(bytes), static_cast<cudaStream_t>(stream)),
      "cudaMemsetAsync", why, why_size);
}

extern "C" int32_t infir2rt_cuda_count_nonfinite(const float *data, int64_t n,
                                                 void *stream, int64_t *count,
                                                 char *why, int64_t why_size) {
  unsigned long long *d = nullptr, h = 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (failed(infir2::rt::cuda::takeWorkspace({{&d, sizeof *d}}),
             "the workspace", why, why_size))
    return 1;
  int32_t rc = failed(cudaMemsetAsync(d, 0, sizeof *d, s), "cudaMemsetAsync",
                      why, why_size);
  if (!rc && n > 0) {
    countNonFiniteKernel<<<unsigned((n + 255) / 256), 256, 0, s>>>(data, n, d);
    rc = failed(cudaGetLastError(), "countNonFiniteKernel", why, why_size);
  }
  if (!rc)
    rc = failed(cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s),
                "cudaMemcpyAsync", why, why_size);
  if (!rc)
    rc = failed(cudaStreamSynchronize(s), "cudaStreamSynchronize", why,
                why_size);
  *count = int64_t(h);
  return rc;
}

extern "C" int64_t infir2rt_cuda_memory_in_use(void) {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess)
    return 0;
  return int64_t(total - free);
}

extern "C" int32_t infir2rt_cuda_stream_create(void **stream, char *why,
                                               int64_t why_size) {
  // A blocking stream: the backend's synchronous copies on the default
  // stream stay ordered with the step's kernels.
  cudaStream_t s = nullptr;
  int32_t rc = failed(cudaStreamCreate(&s), "cudaStreamCreate", why, why_size);
  *stream = s;
  return rc;
}

extern "C" void infir2rt_cuda_stream_destroy(void *stream) {
  cudaStreamDestroy(static_cast<cudaStream_t>(stream));
}

extern "C" int32_t infir2rt_cuda_synchronize(void *stream, char *why,
                                             int64_t why_size) {
  return failed(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)),
                "the step's GPU work failed", why, why_size);
}

extern "C" const infir2rt_entry_fn *infir2rt_cuda_entries(void) {
  static const infir2rt_entry_fn table[INFIR2RT_NUM_ENTRIES] = {
#define INFIR2RT_ENTRY(name, attributes) &infir2rt_cuda_##name,
#include "infir2/runtime/ABI.def"
  };
  return table;
}
