//===- Producers.cuh - Kernels whose results may be quantized --*- CUDA -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// RMSNorm and SwiGLU, shared by their own entry points (Elementwise.cu) and
// by the fused ones that quantize their results as they are produced
// (FusedQuantize.cu). Each kernel hands every stored value (as stored, after
// rounding to the output type) to a `Sink`: nothing for the plain entry
// points, the quantization's amax for the fused ones. Both forms thus
// compute the very same values, with the CPU backend's formulas
// (Elementwise.h).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_PRODUCERS_CUH
#define INFIR2_RUNTIME_CUDA_PRODUCERS_CUH

#include "DeviceView.cuh"
#include "infir2/runtime/Elementwise.h"

namespace infir2::rt::cuda {

/// A producer's sink that does nothing.
struct NoSink {
  __device__ void operator()(int64_t, float) const {}
};

/// One block (of 256 threads) per row: the sum of squares by a block
/// reduction, then the scaled row.
template <typename Sink>
__global__ void rmsNormKernel(View x, View w, View out, int64_t d, float eps,
                              Sink sink) {
  int64_t row = blockIdx.x;
  __shared__ float partial[256];
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    float v = x.get(row * d + i);
    ss += v * v;
  }
  partial[threadIdx.x] = ss;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s)
      partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  float inv = rmsNormScaleOf(partial[0], d, eps);
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    out.set(row * d + i, x.get(row * d + i) * inv * w.get(i));
    sink(row * d + i, out.get(row * d + i));
  }
}

template <typename Sink>
__global__ void swigluKernel(View gate, View up, View out, Sink sink) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= out.numel)
    return;
  out.set(i, swigluOf(gate.get(i), up.get(i)));
  sink(i, out.get(i));
}

} // namespace infir2::rt::cuda

#endif // INFIR2_RUNTIME_CUDA_PRODUCERS_CUH
