//===- Attention.cu - Causal GQA attention and its gradient on the GPU ----===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of the CPU backend's attention and attention_grad, and
// of the decode step's cache_write and cache_attention: one
// thread per (batch, head, query), the softmax over the keys it may see (its
// own segment's, with segment ids) recomputed in the backward pass (no s x s
// tensor is stored, as on the CPU). dK and dV collect from every query with float atomics, so their
// sums come in another order than the CPU backend's. A first, simple
// kernel: correct before fast (a tiled flash-attention kernel is the
// performance work ahead). cache_attention (the decode step) runs the same
// kernel with each query's visible keys ending at its cache position.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "DeviceView.cuh"
#include "FlashAttention.cuh"
#include "Workspace.h"
#include "infir2/runtime/CUDA.h"
#include "infir2/runtime/Descriptor.h"

#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

namespace {

using Operand = infir2::rt::DescOperand;
using infir2::rt::setCallError;
using infir2::rt::descOperand;
using infir2::rt::cuda::View;
using infir2::rt::cuda::viewOf;

constexpr int kMaxHeadDim = 256;

struct Geometry {
  int64_t batch, sq, skv, heads, group, hd, qw, kw;
  float scale;
  bool causal;
  const int32_t *segments;  ///< [batch, sq] segment ids, or null
  const int32_t *positions; ///< [batch, sq] cache_attention's positions

  /// How many keys query s of sequence b may see: its causal prefix, up to
  /// its cache position, or all.
  __device__ int64_t visible(int64_t b, int64_t s) const {
    if (positions)
      return int64_t(positions[b * sq + s]) + 1;
    return causal ? s + 1 : skv;
  }

  /// Whether query s of sequence b may see key t.
  __device__ bool sees(int64_t b, int64_t s, int64_t t) const {
    return !segments || segments[b * sq + s] == segments[b * sq + t];
  }
};

/// Two passes over the visible keys: the maximum score, then the
/// normalizer; probabilities are then recomputed on the fly.
__device__ void softmaxStats(const Geometry &a, View q, View k, int64_t b,
                             int64_t h, int64_t s, float &mx, float &sum) {
  int64_t visible = a.visible(b, s);
  int64_t qo = (b * a.sq + s) * a.qw + h * a.hd;
  mx = -INFINITY;
  for (int64_t t = 0; t < visible; ++t) {
    if (!a.sees(b, s, t))
      continue;
    int64_t ko = (b * a.skv + t) * a.kw + (h / a.group) * a.hd;
    float dot = 0.0f;
    for (int64_t i = 0; i < a.hd; ++i)
      dot += q.get(qo + i) * k.get(ko + i);
    mx = fmaxf(mx, a.scale * dot);
  }
  sum = 0.0f;
  for (int64_t t = 0; t < visible; ++t) {
    if (!a.sees(b, s, t))
      continue;
    int64_t ko = (b * a.skv + t) * a.kw + (h / a.group) * a.hd;
    float dot = 0.0f;
    for (int64_t i = 0; i < a.hd; ++i)
      dot += q.get(qo + i) * k.get(ko + i);
    sum += expf(a.scale * dot - mx);
  }
}

__device__ float probability(const Geometry &a, View q, View k, int64_t b,
                             int64_t h, int64_t s, int64_t t, float mx,
                             float sum) {
  int64_t qo = (b * a.sq + s) * a.qw + h * a.hd;
  int64_t ko = (b * a.skv + t) * a.kw + (h / a.group) * a.hd;
  float dot = 0.0f;
  for (int64_t i = 0; i < a.hd; ++i)
    dot += q.get(qo + i) * k.get(ko + i);
  return expf(a.scale * dot - mx) / sum;
}

__global__ void attentionKernel(Geometry a, View q, View k, View v, View out) {
  int64_t id = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= a.batch * a.heads * a.sq)
    return;
  int64_t s = id % a.sq, h = (id / a.sq) % a.heads, b = id / (a.sq * a.heads);
  float mx, sum;
  softmaxStats(a, q, k, b, h, s, mx, sum);
  float acc[kMaxHeadDim];
  for (int64_t i = 0; i < a.hd; ++i)
    acc[i] = 0.0f;
  int64_t visible = a.visible(b, s);
  for (int64_t t = 0; t < visible; ++t) {
    if (!a.sees(b, s, t))
      continue;
    float p = probability(a, q, k, b, h, s, t, mx, sum);
    int64_t vo = (b * a.skv + t) * a.kw + (h / a.group) * a.hd;
    for (int64_t i = 0; i < a.hd; ++i)
      acc[i] += p * v.get(vo + i);
  }
  int64_t oo = (b * a.sq + s) * a.qw + h * a.hd;
  for (int64_t i = 0; i < a.hd; ++i)
    out.set(oo + i, acc[i]);
}

/// dP = dO·Vᵀ, dS = P ⊙ (dP − Σ P·dP); dQ += dS·K, dK += dS·Q, dV += P·dO.
__global__ void attentionGradKernel(Geometry a, View q, View k, View v,
                                    View dout, float *dq, float *dk,
                                    float *dv) {
  int64_t id = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= a.batch * a.heads * a.sq)
    return;
  int64_t s = id % a.sq, h = (id / a.sq) % a.heads, b = id / (a.sq * a.heads);
  int64_t kh = h / a.group, visible = a.visible(b, s);
  int64_t qo = (b * a.sq + s) * a.qw + h * a.hd;
  float mx, sum;
  softmaxStats(a, q, k, b, h, s, mx, sum);
  float pdp = 0.0f;
  for (int64_t t = 0; t < visible; ++t) {
    if (!a.sees(b, s, t))
      continue;
    int64_t vo = (b * a.skv + t) * a.kw + kh * a.hd;
    float dp = 0.0f;
    for (int64_t i = 0; i < a.hd; ++i)
      dp += dout.get(qo + i) * v.get(vo + i);
    pdp += probability(a, q, k, b, h, s, t, mx, sum) * dp;
  }
  for (int64_t t = 0; t < visible; ++t) {
    if (!a.sees(b, s, t))
      continue;
    int64_t ko = (b * a.skv + t) * a.kw + kh * a.hd;
    float p = probability(a, q, k, b, h, s, t, mx, sum), dp = 0.0f;
    for (int64_t i = 0; i < a.hd; ++i)
      dp += dout.get(qo + i) * v.get(ko + i);
    float ds = p * (dp - pdp) * a.scale;
    for (int64_t i = 0; i < a.hd; ++i) {
      dq[qo + i] += ds * k.get(ko + i);
      atomicAdd(&dk[ko + i], ds * q.get(qo + i));
      atomicAdd(&dv[ko + i], p * dout.get(qo + i));
    }
  }
}

__global__ void roundKernel(const float *in, View out) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < out.numel)
    out.set(i, in[i]);
}

/// The geometry of a call of attention, attention_grad or cache_attention
/// (A: its attributes); `outputs`: how many results precede the optional
/// segments operand.
template <typename A>
int32_t geometryOf(infir2rt_context *ctx, const int64_t *desc,
                   const char *where, int64_t outputs, Geometry &a) {
  Operand q = descOperand(ctx, desc, 0), k = descOperand(ctx, desc, 1);
  A t = infir2::rt::attrs::decode<A>(desc);
  bool segments = false;
  a.heads = t.heads;
  a.group = a.heads / t.kv_heads;
  a.hd = t.head_dim;
  a.scale = float(t.scale);
  a.causal = false;
  if constexpr (!std::is_same_v<A, infir2::rt::attrs::cache_attention>) {
    a.causal = t.causal;
    segments = t.has_segments;
  }
  a.batch = q.shape[0];
  a.sq = q.shape[1];
  a.skv = k.shape[1];
  a.qw = a.heads * a.hd;
  a.kw = (a.heads / a.group) * a.hd;
  a.segments = nullptr;
  a.positions = nullptr;
  if (segments) {
    Operand seg = descOperand(ctx, desc, outputs);
    if (seg.dtype != INFIR2RT_I32)
      return setCallError(ctx, where, "%s",
                          "the CUDA attention takes i32 segment ids");
    a.segments = reinterpret_cast<const int32_t *>(seg.ptr);
  }
  if (a.hd > kMaxHeadDim)
    return setCallError(ctx, where, "the CUDA attention takes head_dim <= %d",
                    kMaxHeadDim);
  return 0;
}

/// The tensor-core problem of an attention call (results and gradients
/// filled in by the caller); `taken` says whether those kernels run it:
/// BF16 operands of a supported head size, as many keys as queries, and
/// INFIR2_CUDA_ATTENTION not set to "fp32" (the FP32 kernels, kept for
/// FP32 models and for comparison).
infir2::rt::cuda::FlashProblem problemOf(const Geometry &a,
                                         infir2rt_context *ctx,
                                         const int64_t *desc, int64_t dout,
                                         bool &taken) {
  static const bool fp32Only = [] {
    const char *v = std::getenv("INFIR2_CUDA_ATTENTION");
    return v && std::strcmp(v, "fp32") == 0;
  }();
  Operand q = descOperand(ctx, desc, 0), k = descOperand(ctx, desc, 1),
          v = descOperand(ctx, desc, 2);
  infir2::rt::cuda::FlashProblem p{};
  p.q = q.ptr;
  p.k = k.ptr;
  p.v = v.ptr;
  int64_t doutType = INFIR2RT_BF16;
  if (dout >= 0) {
    Operand g = descOperand(ctx, desc, dout);
    p.dout = g.ptr;
    doutType = g.dtype;
  }
  p.segments = a.segments;
  p.batch = a.batch;
  p.seq = a.sq;
  p.heads = a.heads;
  p.kvHeads = a.heads / a.group;
  p.headDim = a.hd;
  p.scale = a.scale;
  p.causal = a.causal;
  taken = !fp32Only && a.sq == a.skv &&
          infir2::rt::cuda::flashTakes(p, q.dtype, k.dtype, v.dtype, doutType);
  return p;
}

/// Fails unless every position of `pos` (i32, few) lies in [0, length);
/// read back on the step's stream.
int32_t checkPositions(infir2rt_context *ctx, const Operand &pos,
                       int64_t length, const char *where) {
  if (pos.dtype != INFIR2RT_I32)
    return setCallError(ctx, where, "%s", "the CUDA decode step takes i32 "
                                          "positions");
  std::vector<int32_t> host(pos.numel);
  INFIR2_CUDA_CHECK(ctx,
                    cudaMemcpyAsync(host.data(), pos.ptr, pos.numel * 4,
                                    cudaMemcpyDeviceToHost,
                                    infir2::rt::cuda::streamOf(ctx)),
                    where);
  INFIR2_CUDA_CHECK(
      ctx, cudaStreamSynchronize(infir2::rt::cuda::streamOf(ctx)), where);
  for (int64_t i = 0; i < pos.numel; ++i)
    if (host[i] < 0 || host[i] >= length)
      return setCallError(ctx, where,
                          "position %d of row %lld is outside the cache's "
                          "%lld rows",
                          host[i], (long long)i, (long long)length);
  return 0;
}

/// Row t of `update` to row positions[t] of its sequence in `out`.
__global__ void cacheWriteKernel(const uint8_t *update, const int32_t *pos,
                                 uint8_t *out, int64_t rows, int64_t perSeq,
                                 int64_t length, int64_t rowBytes) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * rowBytes)
    return;
  int64_t r = i / rowBytes, b = r / perSeq;
  out[(b * length + pos[r]) * rowBytes + i % rowBytes] = update[i];
}

} // namespace

extern "C" int32_t infir2rt_cuda_cache_write(infir2rt_context *ctx,
                                             const int64_t *desc,
                                             const char *where) {
  Operand update = descOperand(ctx, desc, 0), cache = descOperand(ctx, desc, 1),
          pos = descOperand(ctx, desc, 2), out = descOperand(ctx, desc, 3);
  int64_t length = cache.shape[1], rows = update.shape[0] * update.shape[1];
  if (int32_t rc = checkPositions(ctx, pos, length, where))
    return rc;
  int64_t rowBytes = cache.last() * infir2rt_dtype_size(cache.dtype);
  if (out.ptr != cache.ptr)
    INFIR2_CUDA_CHECK(ctx,
                      cudaMemcpyAsync(out.ptr, cache.ptr,
                                      cache.numel *
                                          infir2rt_dtype_size(cache.dtype),
                                      cudaMemcpyDeviceToDevice,
                                      infir2::rt::cuda::streamOf(ctx)),
                      where);
  int64_t n = rows * rowBytes;
  cacheWriteKernel<<<unsigned((n + 255) / 256), 256, 0,
                     infir2::rt::cuda::streamOf(ctx)>>>(
      update.ptr, reinterpret_cast<const int32_t *>(pos.ptr), out.ptr, rows,
      update.shape[1], length, rowBytes);
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

extern "C" int32_t infir2rt_cuda_attention(infir2rt_context *ctx,
                                           const int64_t *desc,
                                           const char *where) {
  Geometry a;
  if (int32_t rc =
          geometryOf<infir2::rt::attrs::attention>(ctx, desc, where, 4, a))
    return rc;
  bool flash = false;
  infir2::rt::cuda::FlashProblem p = problemOf(a, ctx, desc, -1, flash);
  if (flash) {
    p.out = viewOf(descOperand(ctx, desc, 3));
    if (int32_t rc = infir2::rt::cuda::flashForward(ctx, where, p))
      return rc;
    return infir2::rt::cuda::finishLaunch(ctx, where);
  }
  int64_t n = a.batch * a.heads * a.sq;
  attentionKernel<<<unsigned((n + 127) / 128), 128, 0,
                    infir2::rt::cuda::streamOf(ctx)>>>(
      a, viewOf(descOperand(ctx, desc, 0)), viewOf(descOperand(ctx, desc, 1)),
      viewOf(descOperand(ctx, desc, 2)), viewOf(descOperand(ctx, desc, 3)));
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

/// Attention over a key/value cache: the attention kernel, each query
/// seeing the cache up to its position (checked on the host first: a few
/// integers).
extern "C" int32_t infir2rt_cuda_cache_attention(infir2rt_context *ctx,
                                                 const int64_t *desc,
                                                 const char *where) {
  Geometry a;
  if (int32_t rc = geometryOf<infir2::rt::attrs::cache_attention>(ctx, desc,
                                                                  where, 4, a))
    return rc;
  Operand pos = descOperand(ctx, desc, 3);
  if (int32_t rc = checkPositions(ctx, pos, a.skv, where))
    return rc;
  a.positions = reinterpret_cast<const int32_t *>(pos.ptr);
  int64_t n = a.batch * a.heads * a.sq;
  attentionKernel<<<unsigned((n + 127) / 128), 128, 0,
                    infir2::rt::cuda::streamOf(ctx)>>>(
      a, viewOf(descOperand(ctx, desc, 0)), viewOf(descOperand(ctx, desc, 1)),
      viewOf(descOperand(ctx, desc, 2)), viewOf(descOperand(ctx, desc, 4)));
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

extern "C" int32_t infir2rt_cuda_attention_grad(infir2rt_context *ctx,
                                                const int64_t *desc,
                                                const char *where) {
  Geometry a;
  if (int32_t rc =
          geometryOf<infir2::rt::attrs::attention_grad>(ctx, desc, where, 7, a))
    return rc;
  bool flash = false;
  infir2::rt::cuda::FlashProblem p = problemOf(a, ctx, desc, 3, flash);
  if (flash) {
    p.dq = viewOf(descOperand(ctx, desc, 4));
    p.dk = viewOf(descOperand(ctx, desc, 5));
    p.dv = viewOf(descOperand(ctx, desc, 6));
    for (const View &g : {p.dq, p.dk, p.dv})
      if (g.dtype != INFIR2RT_F32 && g.dtype != INFIR2RT_BF16)
        return setCallError(ctx, where, "%s",
                            "the CUDA attention gradient writes f32 or bf16");
    if (int32_t rc = infir2::rt::cuda::flashBackward(ctx, where, p))
      return rc;
    return infir2::rt::cuda::finishLaunch(ctx, where);
  }
  // Accumulate in FP32 (in place when the gradients are FP32), then round
  // once to their type.
  Operand grads[3] = {descOperand(ctx, desc, 4), descOperand(ctx, desc, 5),
                      descOperand(ctx, desc, 6)};
  // FP32 accumulators: the gradients themselves, or (for BF16 ones)
  // workspace rounded into them at the end.
  float *acc[3] = {}, *scratch[3] = {};
  int64_t bytes[3] = {};
  for (int i = 0; i < 3; ++i) {
    if (grads[i].dtype != INFIR2RT_F32 && grads[i].dtype != INFIR2RT_BF16)
      return setCallError(ctx, where, "%s",
                      "the CUDA attention gradient writes f32 or bf16");
    if (grads[i].dtype == INFIR2RT_BF16)
      bytes[i] = grads[i].numel * int64_t(sizeof(float));
  }
  INFIR2_CUDA_CHECK(ctx,
                    infir2::rt::cuda::takeWorkspace({{&scratch[0], bytes[0]},
                                                     {&scratch[1], bytes[1]},
                                                     {&scratch[2], bytes[2]}}),
                    where);
  int32_t rc = 0;
  for (int i = 0; i < 3 && !rc; ++i) {
    acc[i] = grads[i].dtype == INFIR2RT_F32
                 ? reinterpret_cast<float *>(grads[i].ptr)
                 : scratch[i];
    rc = infir2::rt::cuda::check(
        ctx,
        cudaMemsetAsync(acc[i], 0, grads[i].numel * sizeof(float),
                        infir2::rt::cuda::streamOf(ctx)),
        "cudaMemsetAsync", where);
  }
  if (!rc) {
    int64_t n = a.batch * a.heads * a.sq;
    attentionGradKernel<<<unsigned((n + 127) / 128), 128, 0,
                          infir2::rt::cuda::streamOf(ctx)>>>(
        a, viewOf(descOperand(ctx, desc, 0)), viewOf(descOperand(ctx, desc, 1)),
        viewOf(descOperand(ctx, desc, 2)), viewOf(descOperand(ctx, desc, 3)),
        acc[0], acc[1], acc[2]);
    for (int i = 0; i < 3; ++i)
      if (grads[i].dtype != INFIR2RT_F32)
        roundKernel<<<unsigned((grads[i].numel + 255) / 256), 256, 0,
                      infir2::rt::cuda::streamOf(ctx)>>>(acc[i],
                                                         viewOf(grads[i]));
    rc = infir2::rt::cuda::finishLaunch(ctx, where);
  }
  return rc;
}
