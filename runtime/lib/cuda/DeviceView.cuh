//===- DeviceView.cuh - FP32/BF16 operands in device code -------*- CUDA
//-*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_DEVICEVIEW_CUH
#define INFIR2_RUNTIME_CUDA_DEVICEVIEW_CUH

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Descriptor.h"

#include <cuda_bf16.h>

namespace infir2::rt::cuda {

/// A device operand read and written as FP32, stored as FP32 or BF16
/// (rounded to nearest even, like the CPU backend).
struct View {
  uint8_t *ptr;
  int64_t dtype, numel;
  __device__ float get(int64_t i) const {
    if (dtype == INFIR2RT_BF16)
      return __bfloat162float(reinterpret_cast<const __nv_bfloat16 *>(ptr)[i]);
    return reinterpret_cast<const float *>(ptr)[i];
  }
  __device__ void set(int64_t i, float v) const {
    if (dtype == INFIR2RT_BF16)
      reinterpret_cast<__nv_bfloat16 *>(ptr)[i] = __float2bfloat16_rn(v);
    else
      reinterpret_cast<float *>(ptr)[i] = v;
  }
};

inline View viewOf(const DescOperand &o) { return {o.ptr, o.dtype, o.numel}; }

} // namespace infir2::rt::cuda

#endif // INFIR2_RUNTIME_CUDA_DEVICEVIEW_CUH
