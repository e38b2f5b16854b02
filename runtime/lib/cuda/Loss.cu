//===- Loss.cu - Cross-entropy and the norm's gradient on the GPU ---------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of the CPU backend's cross_entropy, cross_entropy_grad,
// loss_weight and rms_norm_grad, on the same descriptors. One block per
// token row for the losses and the norm; the norm weight's gradient sums
// over rows in two stages (Reduce.cuh), so in another order than the CPU
// backend's (the GPU test allows for it). With the vocabulary split over
// the tensor-parallel group, each token's log-sum-exp is the whole
// vocabulary's (TensorParallel.cuh). The losses read the host nothing: the
// tokens' weights, their sum and the mean are computed on the device, a target
// out of range is refused at the step's read-back (Deferred.h), and rows of
// FP32 logits are read 16 bytes at a time.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "Deferred.h"
#include "DeviceView.cuh"
#include "Reduce.cuh"
#include "TensorParallel.cuh"
#include "Workspace.h"
#include "infir2/runtime/CUDA.h"
#include "infir2/runtime/Descriptor.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace {

using Operand = infir2::rt::DescOperand;
namespace attrs = infir2::rt::attrs;
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

/// Row `row` of `x` (`vocab` wide) element by element, f(i, x_i) for the
/// thread's share: four consecutive FP32 values per 16-byte load where the
/// row is FP32 and aligned (a vocabulary that is a multiple of 4), else one
/// at a time. The loads are independent: unrolled, several are in flight.
template <typename F>
__device__ void forRow(const View &x, int64_t row, int64_t vocab, F f) {
  if (x.dtype == INFIR2RT_F32 && vocab % 4 == 0 &&
      reinterpret_cast<uintptr_t>(x.ptr) % 16 == 0) {
    const float4 *p = reinterpret_cast<const float4 *>(x.ptr) + row * vocab / 4;
#pragma unroll 4
    for (int64_t k = threadIdx.x; k < vocab / 4; k += blockDim.x) {
      float4 v = p[k];
      f(4 * k, v.x), f(4 * k + 1, v.y), f(4 * k + 2, v.z), f(4 * k + 3, v.w);
    }
    return;
  }
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x)
    f(i, x.get(row * vocab + i));
}

/// out_i = f(i, x_i) over row `row`: four FP32 values per 16-byte load where
/// x is FP32 and aligned, stored 16 bytes (FP32) or as two BF16 pairs (each
/// value rounded once: the LM head's gradient) at a time.
template <typename F>
__device__ void mapRow(const View &x, const View &out, int64_t row,
                       int64_t vocab, F f) {
  bool wide = out.dtype == INFIR2RT_F32, narrow = out.dtype == INFIR2RT_BF16;
  if (x.dtype == INFIR2RT_F32 && (wide || narrow) && vocab % 4 == 0 &&
      reinterpret_cast<uintptr_t>(x.ptr) % 16 == 0 &&
      reinterpret_cast<uintptr_t>(out.ptr) % (wide ? 16 : 4) == 0) {
    const float4 *p = reinterpret_cast<const float4 *>(x.ptr) + row * vocab / 4;
#pragma unroll 4
    for (int64_t k = threadIdx.x; k < vocab / 4; k += blockDim.x) {
      float4 v = p[k];
      float4 r = make_float4(f(4 * k, v.x), f(4 * k + 1, v.y),
                             f(4 * k + 2, v.z), f(4 * k + 3, v.w));
      if (wide) {
        reinterpret_cast<float4 *>(out.ptr)[row * vocab / 4 + k] = r;
      } else {
        __nv_bfloat162 *q =
            reinterpret_cast<__nv_bfloat162 *>(out.ptr) + row * vocab / 2;
        q[2 * k] = __floats2bfloat162_rn(r.x, r.y);
        q[2 * k + 1] = __floats2bfloat162_rn(r.z, r.w);
      }
    }
    return;
  }
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x)
    out.set(row * vocab + i, f(i, x.get(row * vocab + i)));
}

/// log Σ exp(row), stably; every thread gets it.
__device__ float rowLogSumExp(const View &logits, int64_t row, int64_t vocab,
                              float *shared) {
  float mx = -INFINITY;
  forRow(logits, row, vocab, [&](int64_t, float v) { mx = fmaxf(mx, v); });
  mx = blockReduce<true>(mx, shared);
  float sum = 0.0f;
  forRow(logits, row, vocab, [&](int64_t, float v) { sum += expf(v - mx); });
  return mx + logf(blockReduce<false>(sum, shared));
}

/// Each token's loss weight (0 at the ignore index, else the mask's or 1)
/// and, in double, their sum; a weighted target outside [0, vocab) is
/// refused (the smallest position wins) and weighs nothing, unless `vocab`
/// is negative (loss_weight: the chunks' losses check their targets).
__global__ void tokenWeightsKernel(const int32_t *targets, View mask, int64_t n,
                                   int64_t ignore, int64_t vocab, float *w,
                                   double *total,
                                   infir2::rt::cuda::RefusalSlot slot) {
  __shared__ double partial[kThreads];
  double sum = 0.0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t t = targets[i];
    float wi = t == ignore ? 0.0f : (mask.ptr ? mask.get(i) : 1.0f);
    if (vocab >= 0 && wi != 0.0f && (t < 0 || t >= vocab)) {
      infir2::rt::cuda::refuseId(slot, i, int32_t(t));
      wi = 0.0f;
    }
    w[i] = wi;
    sum += wi;
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s)
      partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    atomicAdd(total, partial[0]);
}

/// What both losses share: the weights, their sum and the refusal words in
/// the workspace (and, off a step stream, the refusal read at once).
/// `parts`: the doubles a vocabulary-parallel loss needs besides
/// (TensorParallel.cuh).
struct Weights {
  float *w = nullptr;
  double *total = nullptr, *sum = nullptr, *parts = nullptr;
  unsigned long long *words = nullptr;
};

int32_t tokenWeights(infir2rt_context *ctx, const int64_t *desc,
                     const char *where, int64_t targetsAt, int64_t ignore,
                     bool hasMask, int64_t vocab, Weights &out,
                     int64_t partDoubles = 0) {
  Operand targets = descOperand(ctx, desc, targetsAt);
  View mask{nullptr, INFIR2RT_F32, 0};
  if (hasMask) {
    Operand m = descOperand(ctx, desc, targetsAt + 1);
    if ((m.dtype != INFIR2RT_F32 && m.dtype != INFIR2RT_BF16) ||
        m.numel != targets.numel)
      return setCallError(ctx, where, "%s",
                          "the CUDA loss takes an f32 or bf16 mask per target");
    mask = viewOf(m);
  }
  INFIR2_CUDA_CHECK(
      ctx,
      infir2::rt::cuda::takeWorkspace({{&out.w, targets.numel * 4},
                                       {&out.total, 8},
                                       {&out.sum, 8},
                                       {&out.parts, partDoubles * 8},
                                       {&out.words, 16}}),
      where);
  const infir2::rt::cuda::RefusalKind kind =
      infir2::rt::cuda::targetRefusal(vocab);
  infir2::rt::cuda::RefusalSlot slot;
  if (int32_t rc =
          infir2::rt::cuda::openRefusal(ctx, where, kind,
                                        /*detail=*/true, out.words, slot))
    return rc;
  cudaStream_t stream = infir2::rt::cuda::streamOf(ctx);
  INFIR2_CUDA_CHECK(ctx, cudaMemsetAsync(out.total, 0, 8, stream), where);
  INFIR2_CUDA_CHECK(ctx, cudaMemsetAsync(out.sum, 0, 8, stream), where);
  unsigned blocks = unsigned(
      std::min<int64_t>((targets.numel + kThreads - 1) / kThreads, 1024));
  tokenWeightsKernel<<<std::max(blocks, 1u), kThreads, 0, stream>>>(
      reinterpret_cast<const int32_t *>(targets.ptr), mask, targets.numel,
      ignore, vocab, out.w, out.total, slot);
  INFIR2_CUDA_CHECK(ctx, cudaGetLastError(), where);
  return infir2::rt::cuda::closeRefusal(ctx, where, kind, out.words, slot);
}

__global__ void crossEntropyKernel(View logits, const int32_t *targets,
                                   const float *w, int64_t vocab, double *sum) {
  __shared__ float shared[kThreads];
  int64_t row = blockIdx.x;
  if (w[row] == 0.0f)
    return; // its target may be out of range
  float lse = rowLogSumExp(logits, row, vocab, shared);
  if (threadIdx.x == 0)
    atomicAdd(sum, double(w[row]) *
                       double(lse - logits.get(row * vocab + targets[row])));
}

/// A divisor given to the loss (one chunk's share of a batch's mean) in
/// place of the chunk's own weights.
__global__ void divisorKernel(View divisor, double *total) {
  *total = double(divisor.get(0));
}

__global__ void storeTotalKernel(const double *total, View out) {
  out.set(0, float(*total));
}

/// The mean over the weights, as the CPU backend divides it.
__global__ void meanLossKernel(const double *sum, const double *total,
                               View out) {
  out.set(0, *total == 0.0 ? 0.0f : float(*sum / *total));
}

/// With `wholeLse` (a vocabulary split over the group), each row's
/// log-sum-exp is the whole vocabulary's, and this rank's first id `first`.
__global__ void crossEntropyGradKernel(View logits, const int32_t *targets,
                                       const float *w, int64_t vocab,
                                       View dloss, const double *total,
                                       View out, const double *wholeLse,
                                       int64_t first) {
  __shared__ float shared[kThreads];
  int64_t row = blockIdx.x;
  float scale = *total == 0.0 ? 0.0f : float(double(dloss.get(0)) / *total);
  if (w[row] == 0.0f || scale == 0.0f) {
    mapRow(logits, out, row, vocab, [](int64_t, float) { return 0.0f; });
    return;
  }
  float lse = wholeLse ? float(wholeLse[row])
                       : rowLogSumExp(logits, row, vocab, shared);
  float coeff = scale * w[row];
  int64_t target = targets[row] - first;
  mapRow(logits, out, row, vocab, [&](int64_t i, float v) {
    return coeff * (expf(v - lse) - (i == target ? 1.0f : 0.0f));
  });
}

/// dx of each row, plus `residual`'s element when it has any (it may be dx:
/// each element is read before it is written); each row's 1/rms into
/// `inverse` for dw.
__global__ void rmsNormGradKernel(View x, View wt, View dy, View residual,
                                  View dx, float *inverse, int64_t d,
                                  float eps) {
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
    float g = inv * wt.get(i) * gi - inv * inv * inv / float(d) * xi * dot;
    dx.set(row * d + i, residual.numel ? residual.get(row * d + i) + g : g);
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

} // namespace

extern "C" int32_t infir2rt_cuda_loss_weight(infir2rt_context *ctx,
                                             const int64_t *desc,
                                             const char *where) {
  auto a = attrs::decode<attrs::loss_weight>(desc);
  Operand out = descOperand(ctx, desc, a.has_mask ? 2 : 1);
  Weights w;
  if (int32_t rc = tokenWeights(ctx, desc, where, 0, a.ignore_index, a.has_mask,
                                /*vocab=*/-1, w))
    return rc;
  storeTotalKernel<<<1, 1, 0, infir2::rt::cuda::streamOf(ctx)>>>(w.total,
                                                                 viewOf(out));
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

namespace {

/// What both losses read besides the logits: the tokens' weights (the
/// divisor's total in place of theirs when `divisorAt` >= 0) and, with the
/// vocabulary split over `shards` ranks, this rank's first id and each
/// token's whole-vocabulary log-sum-exp and target logit.
struct LossInputs {
  Weights w;
  int64_t first = 0;
  const double *lse = nullptr, *target = nullptr;
};

int32_t lossInputs(infir2rt_context *ctx, const int64_t *desc,
                   const char *where, int64_t ignore, bool hasMask,
                   int64_t shards, int64_t divisorAt, LossInputs &in) {
  Operand logits = descOperand(ctx, desc, 0),
          targets = descOperand(ctx, desc, 1);
  int64_t vocab = logits.last();
  if (int32_t rc = infir2::rt::cuda::vocabularyStart(ctx, where, shards, vocab,
                                                     in.first))
    return rc;
  if (int32_t rc = tokenWeights(
          ctx, desc, where, 1, ignore, hasMask, vocab * shards, in.w,
          infir2::rt::cuda::wholeVocabularyDoubles(targets.numel, shards)))
    return rc;
  if (divisorAt >= 0)
    divisorKernel<<<1, 1, 0, infir2::rt::cuda::streamOf(ctx)>>>(
        viewOf(descOperand(ctx, desc, divisorAt)), in.w.total);
  if (shards == 1)
    return 0;
  return infir2::rt::cuda::wholeVocabulary(
      ctx, where, viewOf(logits),
      reinterpret_cast<const int32_t *>(targets.ptr), in.w.w, targets.numel,
      vocab, in.first, shards, in.w.parts, &in.lse, &in.target);
}

} // namespace

extern "C" int32_t infir2rt_cuda_cross_entropy(infir2rt_context *ctx,
                                               const int64_t *desc,
                                               const char *where) {
  Operand logits = descOperand(ctx, desc, 0),
          targets = descOperand(ctx, desc, 1);
  auto a = attrs::decode<attrs::cross_entropy>(desc);
  int64_t at = a.has_mask ? 3 : 2;
  Operand out = descOperand(ctx, desc, at + (a.has_divisor ? 1 : 0));
  LossInputs in;
  if (int32_t rc = lossInputs(ctx, desc, where, a.ignore_index, a.has_mask,
                              a.vocab_shards, a.has_divisor ? at : -1, in))
    return rc;
  cudaStream_t stream = infir2::rt::cuda::streamOf(ctx);
  if (in.lse)
    infir2::rt::cuda::addShardedLoss(ctx, in.lse, in.target, in.w.w,
                                     targets.numel, in.w.sum);
  else if (targets.numel > 0)
    crossEntropyKernel<<<unsigned(targets.numel), kThreads, 0, stream>>>(
        viewOf(logits), reinterpret_cast<const int32_t *>(targets.ptr), in.w.w,
        logits.last(), in.w.sum);
  meanLossKernel<<<1, 1, 0, stream>>>(in.w.sum, in.w.total, viewOf(out));
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

extern "C" int32_t infir2rt_cuda_cross_entropy_grad(infir2rt_context *ctx,
                                                    const int64_t *desc,
                                                    const char *where) {
  Operand logits = descOperand(ctx, desc, 0),
          targets = descOperand(ctx, desc, 1);
  auto a = attrs::decode<attrs::cross_entropy_grad>(desc);
  int64_t at = a.has_mask ? 3 : 2;
  Operand dloss = descOperand(ctx, desc, at),
          out = descOperand(ctx, desc, at + (a.has_divisor ? 2 : 1));
  LossInputs in;
  if (int32_t rc = lossInputs(ctx, desc, where, a.ignore_index, a.has_mask,
                              a.vocab_shards, a.has_divisor ? at + 1 : -1, in))
    return rc;
  if (targets.numel > 0)
    crossEntropyGradKernel<<<unsigned(targets.numel), kThreads, 0,
                             infir2::rt::cuda::streamOf(ctx)>>>(
        viewOf(logits), reinterpret_cast<const int32_t *>(targets.ptr), in.w.w,
        logits.last(), viewOf(dloss), in.w.total, viewOf(out), in.lse,
        in.first);
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

extern "C" int32_t infir2rt_cuda_rms_norm_grad(infir2rt_context *ctx,
                                               const int64_t *desc,
                                               const char *where) {
  Operand x = descOperand(ctx, desc, 0), w = descOperand(ctx, desc, 1),
          dy = descOperand(ctx, desc, 2), dx = descOperand(ctx, desc, 3),
          dwOut = descOperand(ctx, desc, 4);
  int64_t d = x.last(), rows = x.rows();
  auto a = attrs::decode<attrs::rms_norm_grad>(desc);
  const uint8_t *acc = nullptr; // checked before anything is written
  if (int32_t rc = infir2::rt::gradientAccumulator(ctx, desc, a.has_acc, 5,
                                                   dwOut, where, &acc))
    return rc;
  View residual{};
  if (a.has_residual) {
    Operand r = descOperand(ctx, desc, a.has_acc ? 6 : 5);
    if (r.dtype != dx.dtype || r.numel != dx.numel)
      return infir2::rt::setCallError(ctx, where, "%s",
                                      "a residual adds into an input gradient "
                                      "of its type and size");
    residual = viewOf(r);
  }
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
      viewOf(x), viewOf(w), viewOf(dy), residual, viewOf(dx), inverse, d,
      float(a.epsilon));
  infir2::rt::cuda::sumColumns(
      ctx, NormWeightTerm{viewOf(x), viewOf(dy), inverse, d}, rows, d, partial,
      viewOf(dwOut), reinterpret_cast<const float *>(acc));
  return infir2::rt::cuda::finishLaunch(ctx, where);
}
