//===- Reduce.cuh - Deterministic reductions without atomics ----*- CUDA -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The sums that reduce over tokens (a bias's or a norm weight's gradient,
// the global norm) in two stages instead of single-address atomics: blocks
// write partial FP64 sums, then one pass adds the partials in order. The
// order is fixed by the shapes alone, so every run gives the same bits, and
// no address is contended (an atomic per element on a few hundred
// addresses serialized the gradient of every RMSNorm weight).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_REDUCE_CUH
#define INFIR2_RUNTIME_CUDA_REDUCE_CUH

#include "CudaCheck.h"
#include "DeviceView.cuh"

#include <algorithm>

namespace infir2::rt::cuda {

/// Row slices of a column sum: slice p holds rows p, p + slices, ...
inline int columnSlices(int64_t rows) {
  return int(std::min<int64_t>(rows, 128));
}

/// partial[p][c] = Σ over slice p's rows r of term(r, c), in FP64.
template <typename Term>
__global__ void columnSlicesKernel(Term term, int64_t rows, int64_t cols,
                                   double *partial) {
  int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols)
    return;
  double acc = 0.0;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y)
    acc += term(r, c);
  partial[blockIdx.y * cols + c] = acc;
}

/// out[c] = Σ_p partial[p][c], in slice order, rounded once.
__global__ inline void columnFinishKernel(const double *partial, int slices,
                                          int64_t cols, View out) {
  int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols)
    return;
  double acc = 0.0;
  for (int p = 0; p < slices; ++p)
    acc += partial[p * cols + c];
  out.set(c, float(acc));
}

/// out[c] = Σ_r term(r, c) over a rows x cols matrix of terms, on the
/// context's stream; `partial` holds columnSlices(rows) x cols doubles.
template <typename Term>
void sumColumns(infir2rt_context *ctx, Term term, int64_t rows, int64_t cols,
                double *partial, View out) {
  int slices = columnSlices(rows);
  unsigned columns = unsigned((cols + 255) / 256);
  columnSlicesKernel<<<dim3(columns, unsigned(slices)), 256, 0,
                       streamOf(ctx)>>>(term, rows, cols, partial);
  columnFinishKernel<<<columns, 256, 0, streamOf(ctx)>>>(partial, slices, cols,
                                                          out);
}

} // namespace infir2::rt::cuda

#endif // INFIR2_RUNTIME_CUDA_REDUCE_CUH
