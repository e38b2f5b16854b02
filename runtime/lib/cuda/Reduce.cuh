//===- Reduce.cuh - Deterministic reductions without atomics ----*- CUDA -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Sums over many rows into few columns (a bias's or a norm weight's
// gradient over tokens) in two stages: row slices write partial FP64 sums,
// then one pass adds them in order. The order is fixed by the shapes alone,
// so every run gives the same bits, and nothing is contended: the RMSNorm
// weight's gradient took an atomic per element on a few hundred addresses,
// and a bias's gradient one thread per column over every token. Few rows or
// many columns take one pass, a thread per column (Reduce.cu has the
// global norm, which reduces to one number).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_REDUCE_CUH
#define INFIR2_RUNTIME_CUDA_REDUCE_CUH

#include "CudaCheck.h"
#include "DeviceView.cuh"

#include <algorithm>
#include <cstdint>

namespace infir2::rt::cuda {

/// Row slices of a column sum: slice p holds rows p, p + slices, ... One
/// slice (a thread per column over all rows) when the rows are few or the
/// columns alone fill the GPU; else up to 128, their partials at most 64 MiB.
inline int columnSlices(int64_t rows, int64_t cols) {
  if (rows <= 16 || cols >= 65536)
    return 1;
  int64_t fit = std::max<int64_t>(1, (int64_t(64) << 20) / (cols * 8));
  return int(std::min<int64_t>({rows, int64_t(128), fit}));
}

/// The workspace bytes sumColumns needs for a rows x cols sum.
inline int64_t columnPartialBytes(int64_t rows, int64_t cols) {
  int slices = columnSlices(rows, cols);
  return slices > 1 ? slices * cols * 8 : 0;
}

/// out[c] = acc[c] + Σ_r term(r, c), one thread per column, rows in order
/// (acc null: 0; acc may be out's storage, read before it is written).
template <typename Term>
__global__ void columnSumKernel(Term term, int64_t rows, int64_t cols,
                                const float *from, View out) {
  int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols)
    return;
  double acc = from ? double(from[c]) : 0.0;
  for (int64_t r = 0; r < rows; ++r)
    acc += term(r, c);
  out.set(c, float(acc));
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

/// out[c] = acc[c] + Σ_p partial[p][c], in slice order, rounded once.
__global__ inline void columnFinishKernel(const double *partial, int slices,
                                          int64_t cols, const float *from,
                                          View out) {
  int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols)
    return;
  double acc = from ? double(from[c]) : 0.0;
  for (int p = 0; p < slices; ++p)
    acc += partial[p * cols + c];
  out.set(c, float(acc));
}

/// out[c] = acc[c] + Σ_r term(r, c) over a rows x cols matrix of terms, on
/// the context's stream; `partial` holds columnPartialBytes(rows, cols).
/// `acc` (FP32, possibly out's own storage) may be null: no accumulator.
template <typename Term>
void sumColumns(infir2rt_context *ctx, Term term, int64_t rows, int64_t cols,
                double *partial, View out, const float *acc = nullptr) {
  int slices = columnSlices(rows, cols);
  unsigned columns = unsigned((cols + 255) / 256);
  if (slices == 1) {
    columnSumKernel<<<columns, 256, 0, streamOf(ctx)>>>(term, rows, cols, acc,
                                                        out);
    return;
  }
  columnSlicesKernel<<<dim3(columns, unsigned(slices)), 256, 0,
                       streamOf(ctx)>>>(term, rows, cols, partial);
  columnFinishKernel<<<columns, 256, 0, streamOf(ctx)>>>(partial, slices, cols,
                                                         acc, out);
}

} // namespace infir2::rt::cuda

#endif // INFIR2_RUNTIME_CUDA_REDUCE_CUH
