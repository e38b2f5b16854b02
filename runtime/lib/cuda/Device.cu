//===- Device.cu - Is a usable GPU there? ---------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/CUDA.h"

#include <cuda_runtime.h>

#include <cstdio>

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
