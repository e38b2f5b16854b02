//===- Backends.cpp - The backends a trainer was built with ---------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The one place that knows which backends were compiled in: the CPU one
// always (Backend.h), the CUDA one where nvcc was (INFIR2_ENABLE_CUDA).
//
//===----------------------------------------------------------------------===//

#include "device/Device.h"

#ifdef INFIR2_HAVE_CUDA
#include "infir2/runtime/CUDA.h"
#endif

const infir2rt_backend *infir2::rt::gpuBackend() {
#ifdef INFIR2_HAVE_CUDA
  return infir2rt_cuda_backend();
#else
  return nullptr;
#endif
}
