//===- Quantize.cu - FP8 quantizers on the GPU ----------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// fp8.quantize and fp8.quantize_dual in three passes over the data:
//  1. the amax of every scale block: a warp-level max of |x| as unsigned bits
//     (non-negative floats order like their bits, and NaN's bits exceed
//     infinity's, so NaN propagates), then one atomicMax per warp;
//  2. one thread per block: refuse a non-finite amax, else the scale, by the
//     same fp8Scale the CPU backend uses;
//  3. every element: x · (1/s) (exact under pow2 scales) or x / s, rounded by
//     the same floatToFP8 the CPU backend uses.
// So the results are the CPU backend's, bit for bit; the GPU test compares
// them. quantize_dual's column-wise copy is written transposed in pass 3;
// a tiled transpose through shared memory is the obvious next step.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "Deferred.h"
#include "DeviceView.cuh"
#include "Quantize.cuh"
#include "Workspace.h"
#include "infir2/runtime/CUDA.h"
#include "infir2/runtime/Descriptor.h"
#include "infir2/runtime/FP8.h"

#include <cuda_bf16.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

using namespace infir2::rt;

namespace {

using Operand = infir2::rt::DescOperand;
namespace attrs = infir2::rt::attrs;
using infir2::rt::setCallError;
using infir2::rt::descOperand;
using infir2::rt::cuda::AmaxPass;
using infir2::rt::cuda::AmaxSink;
using infir2::rt::cuda::Geometry;
using infir2::rt::cuda::geometryOf;

Operand descOperand(infir2rt_context *ctx, const int64_t *desc, int64_t i) {
  const int64_t *w = desc + 2 + i * INFIR2RT_OPERAND_WORDS;
  return {ctx->regions[w[0]] + w[3], w[1], w[2], w[4], w + 5};
}

__device__ float load(const uint8_t *x, int64_t dtype, int64_t i) {
  return infir2::rt::cuda::View{const_cast<uint8_t *>(x), dtype, 0}.get(i);
}

/// Pass 1 of quantize: amax bits of every scale block. A warp whose
/// elements share one block (the common case: 128-wide groups and blocks)
/// reduces first and makes one atomic; otherwise each lane makes its own.
__global__ void amaxKernel(const uint8_t *x, int64_t dtype, int64_t n,
                           Geometry g, unsigned *amax) {
  const unsigned full = 0xffffffffu;
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  bool valid = i < n;
  unsigned bits = valid ? __float_as_uint(fabsf(load(x, dtype, i))) : 0u;
  int64_t b = valid ? g.index(i / g.C, i % g.C) : -1;
  // Lane 0 holds the warp's smallest index: valid if any lane is.
  int64_t b0 = __shfl_sync(full, b, 0);
  bool same = __all_sync(full, b == b0 || b == -1);
  unsigned m = __reduce_max_sync(full, bits);
  if (same) {
    if ((threadIdx.x & 31u) == 0 && b0 >= 0)
      atomicMax(&amax[b0], m);
  } else if (valid) {
    atomicMax(&amax[b], bits);
  }
}

/// Pass 1 of quantize_dual: both copies' amaxes in one read.
__global__ void dualAmaxKernel(const uint8_t *x, int64_t dtype, int64_t n,
                               Geometry g, Geometry gt, unsigned *amax,
                               unsigned *amaxT) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  unsigned bits = __float_as_uint(fabsf(load(x, dtype, i)));
  int64_t q = i / g.C, c = i % g.C;
  atomicMax(&amax[g.index(q, c)], bits);
  atomicMax(&amaxT[gt.index(c, q)], bits); // [K, T]: row c, column q
}

/// Pass 2: scales; a non-finite amax sets *bad to the smallest flag of
/// `flagBase` + block (flagBase: the blocks of the copies before).
__global__ void scaleKernel(const unsigned *amax, int64_t blocks,
                            FP8Format format, ScaleRule rule, float *scale,
                            float *inverse, unsigned long long *bad,
                            unsigned long long tag, int64_t flagBase) {
  int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= blocks)
    return;
  float a = __uint_as_float(amax[b]);
  if (!isfinite(a)) {
    atomicMin(bad,
              tag | infir2::rt::cuda::nonFiniteFlag(flagBase + b, isnan(a)));
    scale[b] = 1.0f;
    inverse[b] = 1.0f;
    return;
  }
  float s = fp8Scale(a, format, rule);
  scale[b] = s;
  inverse[b] = 1.0f / s;
}

/// E8M0 scales (an MX block's; `f8E8M0FNU`): a power-of-two FP32 scale's
/// biased exponent, which is its E8M0 code (fp8Scale's pow2 and floor
/// scales are normal floats; quantizeWith refuses E8M0 under fp32).
__global__ void e8m0Kernel(const float *scale, int64_t blocks, uint8_t *out) {
  int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b < blocks)
    out[b] = uint8_t((__float_as_uint(scale[b]) >> 23) & 0xffu);
}

/// Pass 3: the FP8 data (and, for quantize_dual, the transposed copy).
__global__ void castKernel(const uint8_t *x, int64_t dtype, int64_t n,
                           Geometry g, const float *scale, const float *inverse,
                           FP8Format format, bool pow2, uint8_t *data,
                           Geometry gt, const float *scaleT,
                           const float *inverseT, uint8_t *dataT, int64_t T) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float v = load(x, dtype, i);
  int64_t q = i / g.C, c = i % g.C;
  int64_t b = g.index(q, c);
  data[i] = floatToFP8(pow2 ? v * inverse[b] : v / scale[b], format);
  if (dataT) {
    int64_t bt = gt.index(c, q);
    dataT[c * T + q] =
        floatToFP8(pow2 ? v * inverseT[bt] : v / scaleT[bt], format);
  }
}

} // namespace

/// One pass per 128 x 128 tile where the granularity allows
/// (TileQuantize.cu), else three passes; for one or two copies.
int32_t infir2::rt::cuda::quantizeWith(infir2rt_context *ctx,
                                       const int64_t *desc, const char *where,
                                       bool dual, AmaxPass amaxPass,
                                       const int64_t *producerDesc) {
  Operand x = descOperand(ctx, desc, 0), data = descOperand(ctx, desc, 1),
          scale = descOperand(ctx, desc, 2);
  if (x.dtype != INFIR2RT_F32 && x.dtype != INFIR2RT_BF16)
    return setCallError(ctx, where, "%s",
                    "the CUDA quantizer takes f32 or bf16 inputs");
  // E8M0 scales (MX blocks) are made in FP32 in the workspace, then
  // written as their exponents.
  auto scaleType = [](int64_t t) {
    return t == INFIR2RT_F32 || t == INFIR2RT_E8M0;
  };
  int64_t scaleTType = dual ? descOperand(ctx, desc, 4).dtype : INFIR2RT_F32;
  if (!scaleType(scale.dtype) || !scaleType(scaleTType))
    return setCallError(ctx, where, "%s",
                        "the CUDA quantizer writes f32 or E8M0 scales");
  const bool e8m0 = scale.dtype == INFIR2RT_E8M0,
             e8m0T = scaleTType == INFIR2RT_E8M0;
  // quantize's attributes are quantize_dual's first ones.
  attrs::quantize_dual a;
  if (dual) {
    a = attrs::decode<attrs::quantize_dual>(desc);
  } else {
    auto q = attrs::decode<attrs::quantize>(desc);
    a.format = q.format;
    a.scale_rule = q.scale_rule;
    a.block = q.block;
  }
  FP8Format format = a.format ? FP8Format::E5M2 : FP8Format::E4M3;
  if (const char *why = scaleRuleError(a.scale_rule, e8m0 || e8m0T))
    return setCallError(ctx, where, "%s", why);
  ScaleRule rule = ScaleRule(a.scale_rule);
  bool pow2 = rule != ScaleRule::FP32; // x · (1/s): exact
  int64_t block[INFIR2RT_MAX_RANK];
  for (int64_t i = 0; i < x.rank; ++i)
    block[i] = a.block[i];
  Geometry g, gt{};
  if (!geometryOf(x.shape, x.rank, block, g))
    return setCallError(ctx, where, "%s",
                    "the CUDA quantizer does not handle this granularity");
  Operand dataT{}, scaleT{};
  int64_t T = x.numel / g.C;
  if (dual) {
    dataT = descOperand(ctx, desc, 3);
    scaleT = descOperand(ctx, desc, 4);
    int64_t shapeT[2] = {g.C, T};
    int64_t blockT[2] = {a.block_t[0], a.block_t[1]};
    geometryOf(shapeT, 2, blockT, gt);
  }

  int64_t nb = scale.numel, nbt = dual ? scaleT.numel : 0;
  infir2::rt::cuda::TileJob job{x.ptr,
                                x.dtype,
                                x.numel,
                                g,
                                data.ptr,
                                reinterpret_cast<float *>(scale.ptr),
                                gt,
                                dual ? dataT.ptr : nullptr,
                                dual ? reinterpret_cast<float *>(scaleT.ptr)
                                     : nullptr,
                                nb,
                                format,
                                rule,
                                nullptr,
                                0};
  // INFIR2_CUDA_QUANTIZE=passes keeps the three passes everywhere (to
  // compare; the tests run both).
  static const bool passesOnly = [] {
    const char *v = std::getenv("INFIR2_CUDA_QUANTIZE");
    return v && std::strcmp(v, "passes") == 0;
  }();
  const bool tiled =
      !passesOnly && !e8m0 && !e8m0T && infir2::rt::cuda::tileQuantizable(job);
  // Workspace: the three passes' amax bits and inverses, for both copies;
  // FP32 scales to narrow to E8M0; the error flag.
  unsigned *amax = nullptr;
  float *inverse = nullptr, *wide = nullptr;
  int64_t passBytes = tiled ? 0 : (nb + nbt) * int64_t(sizeof(float));
  int64_t wideBytes =
      ((e8m0 ? nb : 0) + (e8m0T ? nbt : 0)) * int64_t(sizeof(float));
  const infir2::rt::cuda::RefusalKind refusal =
      infir2::rt::cuda::quantizeRefusal(dual, nb);
  unsigned long long *own = nullptr;
  INFIR2_CUDA_CHECK(ctx,
                    infir2::rt::cuda::takeWorkspace({{&amax, passBytes},
                                                     {&inverse, passBytes},
                                                     {&wide, wideBytes},
                                                     {&own, 16}}),
                    where);
  if (e8m0)
    job.scale = wide;
  if (e8m0T)
    job.scaleT = wide + (e8m0 ? nb : 0);
  infir2::rt::cuda::RefusalSlot slot;
  if (int32_t rc = infir2::rt::cuda::openRefusal(ctx, where, refusal,
                                                 /*detail=*/false, own, slot))
    return rc;
  job.bad = slot.word;
  job.tag = slot.tag;
  cudaStream_t stream = infir2::rt::cuda::streamOf(ctx);
  if (tiled) {
    // The producer alone (a sink that takes nothing), then one pass.
    if (amaxPass)
      if (int32_t rc = amaxPass(ctx, producerDesc,
                                AmaxSink{g, gt, nullptr, nullptr}))
        return rc;
    if (int32_t rc = infir2::rt::cuda::tileQuantize(ctx, where, job))
      return rc;
    if (int32_t rc =
            infir2::rt::cuda::closeRefusal(ctx, where, refusal, own, slot))
      return rc;
    return infir2::rt::cuda::finishLaunch(ctx, where);
  }
  INFIR2_CUDA_CHECK(
      ctx, cudaMemsetAsync(amax, 0, (nb + nbt) * sizeof(unsigned), stream),
      where);
  const int threads = 256;
  unsigned grid = unsigned((x.numel + threads - 1) / threads);
  if (amaxPass) {
    AmaxSink sink{g, gt, amax, dual ? amax + nb : nullptr};
    if (int32_t rc = amaxPass(ctx, producerDesc, sink))
      return rc;
  } else if (dual)
    dualAmaxKernel<<<grid, threads, 0, stream>>>(x.ptr, x.dtype, x.numel, g,
                                                 gt, amax, amax + nb);
  else
    amaxKernel<<<grid, threads, 0, stream>>>(x.ptr, x.dtype, x.numel, g, amax);
  INFIR2_CUDA_CHECK(ctx, cudaGetLastError(), where);
  float *s = job.scale, *sT = job.scaleT;
  scaleKernel<<<unsigned((nb + threads - 1) / threads), threads, 0, stream>>>(
      amax, nb, format, rule, s, inverse, job.bad, job.tag, 0);
  if (dual)
    scaleKernel<<<unsigned((nbt + threads - 1) / threads), threads, 0,
                  stream>>>(amax + nb, nbt, format, rule, sT, inverse + nb,
                            job.bad, job.tag, nb);
  if (e8m0)
    e8m0Kernel<<<unsigned((nb + threads - 1) / threads), threads, 0, stream>>>(
        s, nb, scale.ptr);
  if (e8m0T)
    e8m0Kernel<<<unsigned((nbt + threads - 1) / threads), threads, 0, stream>>>(
        sT, nbt, descOperand(ctx, desc, 4).ptr);
  INFIR2_CUDA_CHECK(ctx, cudaGetLastError(), where);
  if (int32_t rc =
          infir2::rt::cuda::closeRefusal(ctx, where, refusal, own, slot))
    return rc;
  castKernel<<<grid, threads, 0, stream>>>(
      x.ptr, x.dtype, x.numel, g, s, inverse, format, pow2, data.ptr, gt, sT,
      dual ? inverse + nb : nullptr, job.dataT, T);
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

namespace {

__global__ void bitsToFloatKernel(const unsigned *bits, float *out, int64_t n) {
  int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b < n)
    out[b] = __uint_as_float(bits[b]);
}

__global__ void dequantizeKernel(const uint8_t *data, FP8Format format,
                                 int64_t n, Geometry g, const float *scale,
                                 infir2::rt::cuda::View out) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    out.set(i, fp8ToFloat(data[i], format) * scale[g.index(i / g.C, i % g.C)]);
}

/// The geometry of block shape `blocks` (an amax's or a dequantize's) for
/// `x`.
bool blocksOf(const attrs::Array<int64_t> &blocks, const Operand &x,
              Geometry &g) {
  int64_t block[INFIR2RT_MAX_RANK];
  for (int64_t i = 0; i < x.rank; ++i)
    block[i] = blocks[i];
  return geometryOf(x.shape, x.rank, block, g);
}

} // namespace

extern "C" int32_t infir2rt_cuda_amax(infir2rt_context *ctx,
                                      const int64_t *desc, const char *where) {
  Operand x = descOperand(ctx, desc, 0), out = descOperand(ctx, desc, 1);
  Geometry g;
  if ((x.dtype != INFIR2RT_F32 && x.dtype != INFIR2RT_BF16) ||
      out.dtype != INFIR2RT_F32 ||
      !blocksOf(attrs::decode<attrs::amax>(desc).block, x, g))
    return setCallError(ctx, where, "%s",
                    "the CUDA amax takes f32/bf16 inputs, writes f32, and "
                    "does not handle this granularity");
  unsigned *bits = nullptr;
  INFIR2_CUDA_CHECK(ctx,
                    infir2::rt::cuda::takeWorkspace(
                        {{&bits, int64_t(out.numel * sizeof(unsigned))}}),
                    where);
  INFIR2_CUDA_CHECK(ctx,
                    cudaMemsetAsync(bits, 0, out.numel * sizeof(unsigned),
                                    infir2::rt::cuda::streamOf(ctx)),
                    where);
  const int threads = 256;
  amaxKernel<<<unsigned((x.numel + threads - 1) / threads), threads, 0,
               infir2::rt::cuda::streamOf(ctx)>>>(x.ptr, x.dtype, x.numel, g,
                                                  bits);
  bitsToFloatKernel<<<unsigned((out.numel + threads - 1) / threads), threads, 0,
                      infir2::rt::cuda::streamOf(ctx)>>>(
      bits, reinterpret_cast<float *>(out.ptr), out.numel);
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

extern "C" int32_t infir2rt_cuda_dequantize(infir2rt_context *ctx,
                                            const int64_t *desc,
                                            const char *where) {
  Operand data = descOperand(ctx, desc, 0), scale = descOperand(ctx, desc, 1),
          out = descOperand(ctx, desc, 2);
  Geometry g;
  if (scale.dtype != INFIR2RT_F32 ||
      (out.dtype != INFIR2RT_F32 && out.dtype != INFIR2RT_BF16) ||
      !blocksOf(attrs::decode<attrs::dequantize>(desc).block, data, g))
    return setCallError(ctx, where, "%s",
                    "the CUDA dequantize takes f32 scales, writes f32/bf16, "
                    "and does not handle this granularity");
  const int threads = 256;
  dequantizeKernel<<<unsigned((data.numel + threads - 1) / threads), threads, 0,
                     infir2::rt::cuda::streamOf(ctx)>>>(
      data.ptr, data.dtype == INFIR2RT_E5M2 ? FP8Format::E5M2 : FP8Format::E4M3,
      data.numel, g, reinterpret_cast<const float *>(scale.ptr),
      infir2::rt::cuda::viewOf(out));
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

extern "C" int32_t infir2rt_cuda_quantize(infir2rt_context *ctx,
                                          const int64_t *desc,
                                          const char *where) {
  return infir2::rt::cuda::quantizeWith(ctx, desc, where, /*dual=*/false,
                                        nullptr, nullptr);
}

/// One or more groups of five operands (ABI.def), one after the other.
extern "C" int32_t infir2rt_cuda_quantize_dual(infir2rt_context *ctx,
                                               const int64_t *desc,
                                               const char *where) {
  int64_t n = descOperandCount(desc);
  if (n % 5 != 0)
    return setCallError(ctx, where,
                        "quantize_dual takes groups of five operands, got %lld",
                        (long long)n);
  if (n == 5)
    return infir2::rt::cuda::quantizeWith(ctx, desc, where, /*dual=*/true,
                                          nullptr, nullptr);
  for (int64_t g = 0; g < n; g += 5) {
    std::vector<int64_t> one = infir2::rt::subDescriptor(
        desc, {g, g + 1, g + 2, g + 3, g + 4}, 0, descAttrCount(desc));
    if (int32_t rc = infir2::rt::cuda::quantizeWith(
            ctx, one.data(), where, /*dual=*/true, nullptr, nullptr))
      return rc;
  }
  return 0;
}
