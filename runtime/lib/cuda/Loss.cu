//===- Loss.cu - Cross-entropy, norm and embedding gradients on the GPU ---===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of the CPU backend's cross_entropy, cross_entropy_grad,
// rms_norm_grad and embedding_grad, on the same descriptors. One block per
// token row for the losses and the norm; the norm weight's gradient sums
// over rows in two stages (Reduce.cuh), the embedding gradient with
// atomics, so their sums come in another order than the CPU backend's (the
// GPU test allows for it).
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "Reduce.cuh"
#include "DeviceView.cuh"
#include "Workspace.h"
#include "infir2/runtime/CUDA.h"
#include "infir2/runtime/Descriptor.h"

#include <vector>

namespace {

using Operand = infir2::rt::DescOperand;
using infir2::rt::descAttr;
using infir2::rt::setCallError;
using infir2::rt::descOperand;
using infir2::rt::cuda::View;
using infir2::rt::cuda::viewOf;

constexpr int kThreads = 256;

/// A block-wide reduction (sum or max) of one value per thread.
template <bool Max> __device__ float blockReduce(float v, float *shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s)
      shared[threadIdx.x] =
          Max ? fmaxf(shared[threadIdx.x], shared[threadIdx.x + s])
              : shared[threadIdx.x] + shared[threadIdx.x + s];
    __syncthreads();
  }
  float r = shared[0];
  __syncthreads();
  return r;
}

/// log Σ exp(row), stably; every thread gets it.
__device__ float rowLogSumExp(View logits, int64_t row, int64_t vocab,
                              float *shared) {
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x)
    mx = fmaxf(mx, logits.get(row * vocab + i));
  mx = blockReduce<true>(mx, shared);
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x)
    sum += expf(logits.get(row * vocab + i) - mx);
  return mx + logf(blockReduce<false>(sum, shared));
}

/// Per-token loss weights (mask, 0 at the ignore index) on the host, with
/// the CPU backend's target check.
int32_t tokenWeights(infir2rt_context *ctx, const int64_t *desc,
                     const char *where, int64_t vocab, std::vector<float> &w,
                     double &total) {
  Operand targets = descOperand(ctx, desc, 1);
  bool hasMask = descAttr(desc, 1) != 0.0;
  int64_t ignore = int64_t(descAttr(desc, 0));
  std::vector<int32_t> t(targets.numel);
  std::vector<float> mask;
  INFIR2_CUDA_CHECK(
      ctx,
      cudaMemcpy(t.data(), targets.ptr, t.size() * 4, cudaMemcpyDeviceToHost),
      where);
  if (hasMask) {
    Operand m = descOperand(ctx, desc, 2);
    if (m.dtype != INFIR2RT_F32)
      return setCallError(ctx, where, "%s", "the CUDA loss takes an f32 mask");
    mask.resize(m.numel);
    INFIR2_CUDA_CHECK(
        ctx,
        cudaMemcpy(mask.data(), m.ptr, mask.size() * 4, cudaMemcpyDeviceToHost),
        where);
  }
  w.resize(t.size());
  total = 0.0;
  for (size_t i = 0; i < t.size(); ++i) {
    float wi = t[i] == ignore ? 0.0f : (hasMask ? mask[i] : 1.0f);
    if (wi != 0.0f && (t[i] < 0 || t[i] >= vocab))
      return setCallError(ctx, where,
                      "target %d at position %zu is out of range [0, %lld)",
                      t[i], i, (long long)vocab);
    w[i] = wi;
    total += wi;
  }
  return 0;
}

__global__ void crossEntropyKernel(View logits, const int32_t *targets,
                                   const float *w, int64_t vocab,
                                   double *total) {
  __shared__ float shared[kThreads];
  int64_t row = blockIdx.x;
  float lse = rowLogSumExp(logits, row, vocab, shared);
  if (threadIdx.x == 0 && w[row] != 0.0f)
    atomicAdd(total, double(w[row]) *
                         double(lse - logits.get(row * vocab + targets[row])));
}

__global__ void crossEntropyGradKernel(View logits, const int32_t *targets,
                                       const float *w, int64_t vocab,
                                       float scale, View out) {
  __shared__ float shared[kThreads];
  int64_t row = blockIdx.x;
  if (w[row] == 0.0f || scale == 0.0f) {
    for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x)
      out.set(row * vocab + i, 0.0f);
    return;
  }
  float lse = rowLogSumExp(logits, row, vocab, shared);
  float coeff = scale * w[row];
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x)
    out.set(row * vocab + i, coeff * (expf(logits.get(row * vocab + i) - lse) -
                                      (i == targets[row] ? 1.0f : 0.0f)));
}

/// dx of each row; each row's 1/rms into `inverse` for dw.
__global__ void rmsNormGradKernel(View x, View wt, View dy, View dx,
                                  float *inverse, int64_t d, float eps) {
  __shared__ float shared[kThreads];
  int64_t row = blockIdx.x;
  float ss = 0.0f, dot = 0.0f;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    float xi = x.get(row * d + i);
    ss += xi * xi;
    dot += wt.get(i) * dy.get(row * d + i) * xi;
  }
  ss = blockReduce<false>(ss, shared);
  dot = blockReduce<false>(dot, shared);
  float inv = 1.0f / sqrtf(ss / float(d) + eps);
  if (threadIdx.x == 0)
    inverse[row] = inv;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    float xi = x.get(row * d + i), gi = dy.get(row * d + i);
    dx.set(row * d + i,
           inv * wt.get(i) * gi - inv * inv * inv / float(d) * xi * dot);
  }
}

/// dw's terms: dy · x / rms, element (row, i).
struct NormWeightTerm {
  View x, dy;
  const float *inverse;
  int64_t d;
  __device__ double operator()(int64_t r, int64_t i) const {
    return double(dy.get(r * d + i) * x.get(r * d + i) * inverse[r]);
  }
};

template <typename T> __global__ void castKernel(const T *in, View out) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < out.numel)
    out.set(i, float(in[i]));
}

__global__ void embeddingGradKernel(const int32_t *ids, View dy, float *out,
                                    int64_t tokens, int64_t dim) {
  int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= tokens * dim)
    return;
  int64_t t = k / dim, i = k % dim;
  atomicAdd(&out[int64_t(ids[t]) * dim + i], dy.get(k));
}

} // namespace

extern "C" int32_t infir2rt_cuda_cross_entropy(infir2rt_context *ctx,
                                               const int64_t *desc,
                                               const char *where) {
  Operand logits = descOperand(ctx, desc, 0),
          targets = descOperand(ctx, desc, 1);
  bool hasMask = descAttr(desc, 1) != 0.0;
  Operand out = descOperand(ctx, desc, hasMask ? 3 : 2);
  int64_t vocab = logits.last();
  std::vector<float> w;
  double total = 0.0;
  if (int32_t rc = tokenWeights(ctx, desc, where, vocab, w, total))
    return rc;
  float *dw = nullptr;
  double *sum = nullptr;
  INFIR2_CUDA_CHECK(ctx,
                    infir2::rt::cuda::takeWorkspace(
                        {{&dw, int64_t(w.size() * 4)}, {&sum, sizeof *sum}}),
                    where);
  cudaStream_t stream = infir2::rt::cuda::streamOf(ctx);
  INFIR2_CUDA_CHECK(ctx,
                    cudaMemcpyAsync(dw, w.data(), w.size() * 4,
                                    cudaMemcpyHostToDevice, stream),
                    where);
  INFIR2_CUDA_CHECK(ctx, cudaMemsetAsync(sum, 0, sizeof *sum, stream), where);
  crossEntropyKernel<<<unsigned(targets.numel), kThreads, 0,
                       infir2::rt::cuda::streamOf(ctx)>>>(
      viewOf(logits), reinterpret_cast<const int32_t *>(targets.ptr), dw, vocab,
      sum);
  double s = 0.0;
  int32_t rc = infir2::rt::cuda::finishLaunch(ctx, where);
  if (!rc)
    rc = infir2::rt::cuda::check(
        ctx, cudaMemcpy(&s, sum, sizeof s, cudaMemcpyDeviceToHost),
        "cudaMemcpy", where);
  if (rc)
    return rc;
  float loss = total == 0.0 ? 0.0f : float(s / total);
  INFIR2_CUDA_CHECK(
      ctx, cudaMemcpy(out.ptr, &loss, sizeof loss, cudaMemcpyHostToDevice),
      where);
  return 0;
}

extern "C" int32_t infir2rt_cuda_cross_entropy_grad(infir2rt_context *ctx,
                                                    const int64_t *desc,
                                                    const char *where) {
  Operand logits = descOperand(ctx, desc, 0),
          targets = descOperand(ctx, desc, 1);
  bool hasMask = descAttr(desc, 1) != 0.0;
  Operand dloss = descOperand(ctx, desc, hasMask ? 3 : 2),
          out = descOperand(ctx, desc, hasMask ? 4 : 3);
  int64_t vocab = logits.last();
  std::vector<float> w;
  double total = 0.0;
  if (int32_t rc = tokenWeights(ctx, desc, where, vocab, w, total))
    return rc;
  float g = 0.0f;
  INFIR2_CUDA_CHECK(
      ctx, cudaMemcpy(&g, dloss.ptr, sizeof g, cudaMemcpyDeviceToHost), where);
  float *dw = nullptr;
  INFIR2_CUDA_CHECK(
      ctx, infir2::rt::cuda::takeWorkspace({{&dw, int64_t(w.size() * 4)}}),
      where);
  INFIR2_CUDA_CHECK(ctx,
                    cudaMemcpyAsync(dw, w.data(), w.size() * 4,
                                    cudaMemcpyHostToDevice,
                                    infir2::rt::cuda::streamOf(ctx)),
                    where);
  crossEntropyGradKernel<<<unsigned(targets.numel), kThreads, 0,
                           infir2::rt::cuda::streamOf(ctx)>>>(
      viewOf(logits), reinterpret_cast<const int32_t *>(targets.ptr), dw, vocab,
      total == 0.0 ? 0.0f : float(double(g) / total), viewOf(out));
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

extern "C" int32_t infir2rt_cuda_rms_norm_grad(infir2rt_context *ctx,
                                               const int64_t *desc,
                                               const char *where) {
  Operand x = descOperand(ctx, desc, 0), w = descOperand(ctx, desc, 1),
          dy = descOperand(ctx, desc, 2), dx = descOperand(ctx, desc, 3),
          dwOut = descOperand(ctx, desc, 4);
  int64_t d = x.last(), rows = x.rows();
  const uint8_t *acc = nullptr; // checked before anything is written
  if (int32_t rc =
          infir2::rt::gradientAccumulator(ctx, desc, 1, 5, dwOut, where, &acc))
    return rc;
  // dw sums over the rows without atomics (Reduce.cuh).
  double *partial = nullptr;
  float *inverse = nullptr;
  INFIR2_CUDA_CHECK(
      ctx,
      infir2::rt::cuda::takeWorkspace(
          {{&partial, infir2::rt::cuda::columnPartialBytes(rows, d)},
           {&inverse, rows * 4}}),
      where);
  rmsNormGradKernel<<<unsigned(rows), kThreads, 0,
                      infir2::rt::cuda::streamOf(ctx)>>>(
      viewOf(x), viewOf(w), viewOf(dy), viewOf(dx), inverse, d,
      float(descAttr(desc, 0)));
  infir2::rt::cuda::sumColumns(
      ctx, NormWeightTerm{viewOf(x), viewOf(dy), inverse, d}, rows, d, partial,
      viewOf(dwOut), reinterpret_cast<const float *>(acc));
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

extern "C" int32_t infir2rt_cuda_embedding_grad(infir2rt_context *ctx,
                                                const int64_t *desc,
                                                const char *where) {
  Operand ids = descOperand(ctx, desc, 0), dy = descOperand(ctx, desc, 1),
          out = descOperand(ctx, desc, 2);
  if (ids.dtype != INFIR2RT_I32)
    return setCallError(ctx, where, "%s",
                        "the CUDA embedding gradient takes i32 ids");
  int64_t vocab = out.shape[0], dim = out.shape[1];
  std::vector<int32_t> host(ids.numel);
  INFIR2_CUDA_CHECK(
      ctx,
      cudaMemcpy(host.data(), ids.ptr, host.size() * 4, cudaMemcpyDeviceToHost),
      where);
  for (size_t t = 0; t < host.size(); ++t)
    if (host[t] < 0 || host[t] >= vocab)
      return setCallError(ctx, where,
                      "token id %d at position %zu is out of range [0, %lld)",
                      host[t], t, (long long)vocab);
  // Rows are summed in FP32 (atomics): in the result itself when it is
  // FP32, else in a workspace rounded once to the result type, as the CPU
  // backend does. They start from the accumulator when there is one (FP32,
  // the result's type: copied unless it is the result itself), else zero.
  float *sum = reinterpret_cast<float *>(out.ptr);
  if (out.dtype != INFIR2RT_F32)
    INFIR2_CUDA_CHECK(ctx,
                      infir2::rt::cuda::takeWorkspace({{&sum, out.numel * 4}}),
                      where);
  cudaStream_t stream = infir2::rt::cuda::streamOf(ctx);
  const uint8_t *acc = nullptr;
  if (int32_t rc =
          infir2::rt::gradientAccumulator(ctx, desc, 0, 3, out, where, &acc))
    return rc;
  if (!acc)
    INFIR2_CUDA_CHECK(ctx, cudaMemsetAsync(sum, 0, out.numel * 4, stream),
                      where);
  else if (acc != out.ptr)
    INFIR2_CUDA_CHECK(ctx,
                      cudaMemcpyAsync(sum, acc, out.numel * 4,
                                      cudaMemcpyDeviceToDevice, stream),
                      where);
  embeddingGradKernel<<<unsigned((ids.numel * dim + kThreads - 1) / kThreads),
                        kThreads, 0, stream>>>(
      reinterpret_cast<const int32_t *>(ids.ptr), viewOf(dy), sum, ids.numel,
      dim);
  if (out.dtype != INFIR2RT_F32)
    castKernel<<<unsigned((out.numel + kThreads - 1) / kThreads), kThreads, 0,
                 stream>>>(sum, viewOf(out));
  return infir2::rt::cuda::finishLaunch(ctx, where);
}
