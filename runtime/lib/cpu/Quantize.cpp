//===- Quantize.cpp - FP8 quantization on the CPU -------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// fp8.quantize, fp8.dequantize and fp8.amax (quantize_dual is in
// QuantizeDual.cpp, the vector loops in Fp8Loops.cpp): block amaxes
// (NaN propagates; a non-finite block is refused), scales by fp8Scale and the
// cast by floatToFP8 (FP8.h), the same functions the CUDA kernels run.
//
//===----------------------------------------------------------------------===//

#include "Blocks.h"
#include "Operand.h"
#include "Fp8Loops.h"

#include "infir2/runtime/FP8.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace infir2::rt::cpu {

namespace {

/// The largest magnitude of n floats, or NaN if any is not finite. Eight
/// independent lanes, so that the compiler vectorizes it.
float blockAbsMax(const float *x, int64_t n) {
  float m[8] = {}, poison[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) {
      float a = std::fabs(x[i + l]);
      m[l] = a > m[l] ? a : m[l];
      poison[l] += x[i + l] * 0.0f; // NaN for NaN or ±inf
    }
  float r = 0.0f, p = 0.0f;
  for (; i < n; ++i) {
    r = std::max(r, std::fabs(x[i]));
    p += x[i] * 0.0f;
  }
  for (int l = 0; l < 8; ++l) {
    r = std::max(r, m[l]);
    p += poison[l];
  }
  return p == 0.0f ? r : std::numeric_limits<float>::quiet_NaN();
}

/// data = fp8(x · inv[b]) under power-of-two scales (the reciprocal is
/// exact), else fp8(x / s[b]), with a branch-free conversion: along a row
/// of the fast geometry each block of columns is one vectorized loop.
void writeCodes(const Blocks &g, int64_t rows, const float *x,
                const float *factor, bool multiply, uint8_t *out,
                FP8Format format) {
#pragma omp parallel for if (rows * g.C > 65536)
  for (int64_t q = 0; q < rows; ++q) {
    if (!g.fast()) {
      forEachBlocked(g, q, q + 1, [&](int64_t i, int64_t b) {
        float v = multiply ? x[i] * factor[b] : x[i] / factor[b];
        out[i] = floatToFP8(v, format);
      });
      continue;
    }
    int64_t base = g.rowBase(q);
    for (int64_t cb = 0, ncb = g.C / g.bc; cb < ncb; ++cb)
      encodeSpan(format, x + q * g.C + cb * g.bc, factor[base + cb], multiply,
                 out + q * g.C + cb * g.bc, g.bc);
  }
}

} // namespace

int32_t quantizeInto(const Call &c, const float *x, const Operand &data,
                     const Operand &scale, FP8Format format, ScaleRule rule,
                     const int64_t *block) {
  Blocks g(data, block);
  int64_t rows = data.numel / g.C;
  std::vector<float> amax(scale.numel, 0.0f);
#pragma omp parallel if (data.numel > 65536)
  {
    std::vector<float> local(scale.numel, 0.0f);
#pragma omp for
    for (int64_t q = 0; q < rows; ++q) {
      if (!g.fast()) {
        forEachBlocked(g, q, q + 1, [&](int64_t i, int64_t b) {
          local[b] = nanMax(local[b], std::fabs(x[i]));
        });
        continue;
      }
      int64_t base = g.rowBase(q);
      for (int64_t cb = 0, ncb = g.C / g.bc; cb < ncb; ++cb) {
        const float *chunk = x + q * g.C + cb * g.bc;
        float m = blockAbsMax(chunk, g.bc);
        if (std::isnan(m)) { // a non-finite value: NaN, or else inf
          m = 0.0f;
          for (int64_t c = 0; c < g.bc; ++c)
            m = nanMax(m, std::fabs(chunk[c]));
        }
        local[base + cb] = nanMax(local[base + cb], m);
      }
    }
#pragma omp critical
    for (int64_t b = 0; b < scale.numel; ++b)
      amax[b] = nanMax(amax[b], local[b]);
  }
  int64_t bad = -1; // the first non-finite block
  for (int64_t b = 0; b < scale.numel && bad < 0; ++b)
    if (!std::isfinite(amax[b]))
      bad = b;
  // A tensor-parallel rank refuses with its group, whose shards may all be
  // finite, so that no rank is left waiting in the step's next collective.
  if (const infir2rt_communicator *tp = c.ctx->tp_comm) {
    float refused = bad >= 0 ? 1.0f : 0.0f;
    char error[256] = {0};
    if (tp->all_reduce_sum(tp->impl, &refused, 1, error, sizeof error))
      return c.fail("agreeing on the quantization over the tensor-parallel "
                    "group failed: %s",
                    error);
    if (bad < 0 && refused > 0.0f) {
      c.fail("a non-finite amax on another tensor-parallel rank: refusing "
             "to quantize with it");
      return INFIR2RT_NONFINITE;
    }
  }
  if (bad >= 0) {
    c.fail("non-finite amax (%s) in scale block %lld: refusing to "
           "quantize it",
           std::isnan(amax[bad]) ? "nan" : "inf", (long long)bad);
    return INFIR2RT_NONFINITE;
  }
  std::vector<float> s(scale.numel);
  for (int64_t b = 0; b < scale.numel; ++b) {
    s[b] = fp8Scale(amax[b], format, rule);
    scale.set(b, s[b]);
  }
  // x / s: for a power-of-two scale (>= 2^-57, kAmaxFloor / 57344) the
  // reciprocal is exact, so multiplying by it is the same rounding.
  std::vector<float> inv(scale.numel);
  for (int64_t b = 0; b < scale.numel; ++b)
    inv[b] = 1.0f / s[b];
  bool pow2 = rule != ScaleRule::FP32;
  writeCodes(g, rows, x, pow2 ? inv.data() : s.data(), pow2, data.ptr,
             format);
  return 0;
}

Buffer dequantized(const Operand &data, const Operand &scale,
                   const int64_t *block) {
  std::vector<float> s(scale.numel);
  for (int64_t b = 0; b < scale.numel; ++b)
    s[b] = scale.get(b);
  Buffer out(data.numel);
  const float *table = decodeTable(
      data.dtype == INFIR2RT_E5M2 ? FP8Format::E5M2 : FP8Format::E4M3);
  Blocks g(data, block);
#pragma omp parallel for if (data.numel > 65536)
  for (int64_t q = 0; q < data.numel / g.C; ++q)
    forEachBlocked(g, q, q + 1, [&](int64_t i, int64_t b) {
      out[i] = table[data.ptr[i]] * s[b];
    });
  return out;
}

bool powerOfTwoScales(const Operand &scale) {
  for (int64_t b = 0; b < scale.numel; ++b) {
    int e;
    if (!(std::frexp(scale.get(b), &e) == 0.5f && e >= -99 && e <= 101))
      return false;
  }
  return true;
}

bool dequantizedBf16(const Operand &data, const Operand &scale,
                     const int64_t *block, Scratch<uint16_t> &out) {
  if (!powerOfTwoScales(scale))
    return false;
  std::vector<float> s(scale.numel);
  for (int64_t b = 0; b < scale.numel; ++b)
    s[b] = scale.get(b);
  Blocks g(data, block);
  int64_t rows = data.numel / g.C;
  const float *table = decodeTable(
      data.dtype == INFIR2RT_E5M2 ? FP8Format::E5M2 : FP8Format::E4M3);
  const uint8_t *codes = data.ptr;
  uint16_t *o = out.resize(data.numel);
#pragma omp parallel for if (data.numel > 65536)
  for (int64_t q = 0; q < rows; ++q) {
    if (!g.fast()) {
      forEachBlocked(g, q, q + 1, [&](int64_t i, int64_t b) {
        bf16Span(codes + i, table, s[b], o + i, 1);
      });
      continue;
    }
    int64_t base = g.rowBase(q);
    for (int64_t cb = 0, ncb = g.C / g.bc; cb < ncb; ++cb) {
      int64_t at = q * g.C + cb * g.bc;
      bf16Span(codes + at, table, s[base + cb], o + at, g.bc);
    }
  }
  return true;
}

void decodedCodes(const Operand &data, float *f32, uint16_t *bf16) {
  const float *table = decodeTable(
      data.dtype == INFIR2RT_E5M2 ? FP8Format::E5M2 : FP8Format::E4M3);
  const uint8_t *codes = data.ptr;
#pragma omp parallel for simd if (data.numel > 65536)
  for (int64_t i = 0; i < data.numel; ++i) {
    float v = table[codes[i]];
    if (f32)
      f32[i] = v;
    if (bf16) {
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      bf16[i] = uint16_t(bits >> 16); // exact: at most 3 significand bits
    }
  }
}

int32_t quantize(const Call &c) {
  Operand x = c.operand(0), data = c.operand(1), scale = c.operand(2);
  auto a = c.attrs<attrs::quantize>();
  if (const char *why =
          scaleRuleError(a.scale_rule, scale.dtype == INFIR2RT_E8M0))
    return c.fail("%s", why);
  FP8Format format = a.format ? FP8Format::E5M2 : FP8Format::E4M3;
  std::vector<int64_t> block = a.block.values();
  Buffer bx;
  return quantizeInto(c, x.floats(bx), data, scale, format,
                      ScaleRule(a.scale_rule), block.data());
}

int32_t dequantize(const Call &c) {
  Operand data = c.operand(0), scale = c.operand(1), out = c.operand(2);
  std::vector<int64_t> block = c.attrs<attrs::dequantize>().block.values();
  Buffer x = dequantized(data, scale, block.data());
  for (int64_t i = 0; i < out.numel; ++i)
    out.set(i, x[i]);
  return 0;
}

int32_t amax(const Call &c) {
  Operand x = c.operand(0), out = c.operand(1);
  std::vector<int64_t> block = c.attrs<attrs::amax>().block.values();
  Blocks g(x, block.data());
  std::vector<float> amax(out.numel, 0.0f);
  forEachBlocked(g, 0, x.numel / g.C, [&](int64_t i, int64_t b) {
    amax[b] = nanMax(amax[b], std::fabs(x.get(i)));
  });
  for (int64_t i = 0; i < out.numel; ++i)
    out.set(i, amax[i]);
  return 0;
}

} // namespace infir2::rt::cpu
