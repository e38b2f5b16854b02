//===- FP8.h - FP8 conversions and scale rule for every backend -*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The per-element FP8 math of the numerics contract, shared by the CPU
// backend and (compiled by nvcc) the CUDA kernels, so that CPU tests exercise
// the code the GPU runs. Header-only, no dependencies.
//
// - float -> E4M3 (f8E4M3FN) / E5M2: round to nearest even, saturating to the
//   largest finite magnitude (448 / 57344), infinities included; every NaN
//   becomes the format's positive NaN code (0x7f). Bit-identical to CUDA's
//   __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3 / __NV_E5M2) for every
//   one of the 2^32 float inputs (test/Unit/Runtime/FP8Test.cpp).
// - E4M3 / E5M2 -> float: exact.
// - scale rules: amax 0 -> 1; otherwise a = max(amax, 1e-12) and
//   fp32: a / fmt_max; pow2: that rounded up to a power of two (nothing
//   saturates); floor: 2^(floor(log2 a) - emax), emax 8 for E4M3 and 15
//   for E5M2 (the OCP MX specification's conversion: the block's largest
//   values may saturate). So a scale is never zero, subnormal-small or
//   infinite, and the power-of-two ones are E8M0 codes. Non-finite amax
//   must be rejected by the caller (it is reported, never turned into a
//   number).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_FP8_H
#define INFIR2_RUNTIME_FP8_H

#include "infir2/runtime/HostDevice.h"

#include <cstdint>
#include <cstring>


namespace infir2::rt {

enum class FP8Format : uint8_t { E4M3, E5M2 };

/// How a block's scale follows from its amax (the fp8 dialect's ScaleRule,
/// and the quantizers' scale_rule attribute: these values).
enum class ScaleRule : uint8_t { FP32 = 0, Pow2 = 1, Floor = 2 };

namespace detail {

INFIR2_HD uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

INFIR2_HD float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// Shifts `value` right by `shift` bits, rounding to nearest even.
INFIR2_HD uint32_t shiftRoundEven(uint32_t value, unsigned shift) {
  if (shift == 0)
    return value;
  if (shift > 31)
    return 0;
  uint32_t kept = value >> shift;
  uint32_t rest = value & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  return kept + (rest > half || (rest == half && (kept & 1)));
}

/// float -> FP8 with `M` mantissa bits and exponent bias `Bias`, saturating
/// to the code `MaxCode` (sign excluded) and mapping NaN to `NaNCode`.
template <unsigned M, int Bias, uint8_t MaxCode, uint8_t NaNCode>
INFIR2_HD uint8_t toFP8(float x) {
  uint32_t u = floatBits(x);
  uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u)
    return NaNCode; // CUDA returns the positive NaN code for every NaN

  int exp = static_cast<int>(u >> 23) - 127; // unbiased; -127 for subnormals
  uint32_t mant = u & 0x7fffffu;
  constexpr int kMinNormalExp = 1 - Bias;
  uint32_t code;
  if (exp >= kMinNormalExp) {
    // Normal in FP8 (unless the rounding or the exponent overflows).
    uint32_t rounded = shiftRoundEven(mant, 23 - M); // may carry into 1 << M
    int e = exp + Bias + static_cast<int>(rounded >> M);
    code = (static_cast<uint32_t>(e) << M) | (rounded & ((1u << M) - 1));
  } else {
    // Subnormal in FP8: count units of 2^(kMinNormalExp - M). A carry to
    // 1 << M is exactly the smallest normal, whose code is the same number.
    if (exp == -127)
      return sign; // float subnormals are far below FP8's smallest subnormal
    uint32_t full = mant | 0x800000u;
    unsigned shift =
        static_cast<unsigned>(23 - static_cast<int>(M) + kMinNormalExp - exp);
    code = shiftRoundEven(full, shift);
  }
  if (code > MaxCode)
    code = MaxCode;
  return sign | static_cast<uint8_t>(code);
}

/// The same conversion without branches, so that a loop of it vectorizes:
/// the normal code by rounding the float's bits to M mantissa bits (RNE,
/// the carry running into the exponent) and rebiasing, the subnormal code
/// by rounding |x| / 2^(1 - Bias - M) to an integer in float arithmetic
/// (adding and subtracting 2^23 rounds to nearest even), then a select.
/// Equal to toFP8 for every float (checked exhaustively in FP8Test).
template <unsigned M, int Bias, uint8_t MaxCode, uint8_t NaNCode>
INFIR2_HD uint8_t toFP8Branchless(float x) {
  uint32_t u = floatBits(x);
  uint32_t sign = (u >> 24) & 0x80u;
  uint32_t a = u & 0x7fffffffu;
  constexpr unsigned kDrop = 23 - M;
  uint32_t rounded = a + ((1u << (kDrop - 1)) - 1) + ((a >> kDrop) & 1u);
  uint32_t normal =
      (rounded >> kDrop) - (static_cast<uint32_t>(127 - Bias) << M);
  // |x| below the smallest normal, 2^(1 - Bias): units of its subnormals.
  constexpr uint32_t kMinNormalBits = static_cast<uint32_t>(128 - Bias) << 23;
  float units = bitsFloat(a) * bitsFloat(static_cast<uint32_t>(127 + Bias - 1 +
                                                               static_cast<int>(M))
                                         << 23);
  // Clamped first (NaN too), so that the conversion to an integer is
  // defined where the normal code is the one selected.
  units = units < 16.0f ? units : 16.0f;
  uint32_t subnormal =
      static_cast<uint32_t>((units + 8388608.0f) - 8388608.0f);
  uint32_t code = a < kMinNormalBits ? subnormal : normal;
  code = code > MaxCode ? MaxCode : code;
  return a > 0x7f800000u ? NaNCode : static_cast<uint8_t>(sign | code);
}

template <unsigned M, int Bias>
INFIR2_HD float fromFP8(uint8_t v, bool isNaN, bool isInf) {
  uint32_t sign = static_cast<uint32_t>(v & 0x80) << 24;
  if (isNaN)
    return bitsFloat(sign | 0x7fc00000u);
  if (isInf)
    return bitsFloat(sign | 0x7f800000u);
  uint32_t e = (v & 0x7f) >> M, m = v & ((1u << M) - 1);
  if (e == 0) {
    // Subnormal: m * 2^(1 - Bias - M), exact in float.
    float mag =
        static_cast<float>(m) *
        bitsFloat(static_cast<uint32_t>(127 + 1 - Bias - static_cast<int>(M))
                  << 23);
    return bitsFloat(floatBits(mag) | sign);
  }
  return bitsFloat(sign | ((e - Bias + 127) << 23) | (m << (23 - M)));
}

} // namespace detail

/// The largest finite magnitude of a format.
INFIR2_HD float fp8MaxFinite(FP8Format f) {
  return f == FP8Format::E4M3 ? 448.0f : 57344.0f;
}

INFIR2_HD uint8_t floatToE4M3(float x) {
  return detail::toFP8<3, 7, 0x7e, 0x7f>(x);
}

INFIR2_HD uint8_t floatToE5M2(float x) {
  return detail::toFP8<2, 15, 0x7b, 0x7f>(x);
}

INFIR2_HD uint8_t floatToFP8(float x, FP8Format f) {
  return f == FP8Format::E4M3 ? floatToE4M3(x) : floatToE5M2(x);
}

/// floatToE4M3 / floatToE5M2 without branches (vectorizable; identical
/// results).
INFIR2_HD uint8_t floatToE4M3Branchless(float x) {
  return detail::toFP8Branchless<3, 7, 0x7e, 0x7f>(x);
}
INFIR2_HD uint8_t floatToE5M2Branchless(float x) {
  return detail::toFP8Branchless<2, 15, 0x7b, 0x7f>(x);
}

INFIR2_HD float e4m3ToFloat(uint8_t v) {
  return detail::fromFP8<3, 7>(v, (v & 0x7f) == 0x7f, false);
}

INFIR2_HD float e5m2ToFloat(uint8_t v) {
  return detail::fromFP8<2, 15>(v, (v & 0x7f) > 0x7c, (v & 0x7f) == 0x7c);
}

INFIR2_HD float fp8ToFloat(uint8_t v, FP8Format f) {
  return f == FP8Format::E4M3 ? e4m3ToFloat(v) : e5m2ToFloat(v);
}

/// Why a quantizer's scale_rule attribute cannot go with the storage of its
/// scales, or null: the rule is 0, 1 or 2 (ScaleRule), and E8M0 scales
/// take a power-of-two rule (an FP32 scale would be truncated to its
/// exponent while the codes were divided by the whole scale).
inline const char *scaleRuleError(int64_t rule, bool e8m0Scales) {
  if (rule < 0 || rule > 2)
    return "scale_rule must be 0 (fp32), 1 (pow2) or 2 (floor)";
  if (e8m0Scales && rule == int64_t(ScaleRule::FP32))
    return "E8M0 scales take a power-of-two scale rule (pow2 or floor), not "
           "fp32";
  return nullptr;
}

/// Amax below this is treated as this, so that a scale never underflows.
constexpr float kAmaxFloor = 1e-12f;

/// The dequantization scale for a block with largest magnitude `amax`
/// (finite, non-negative): see the file comment.
INFIR2_HD float fp8Scale(float amax, FP8Format f, ScaleRule rule) {
  if (amax == 0.0f)
    return 1.0f;
  float a = amax > kAmaxFloor ? amax : kAmaxFloor;
  if (rule == ScaleRule::Floor) {
    // 2^(floor(log2 a) - emax): a's exponent (a is a normal float), less
    // the format's largest exponent.
    int emax = f == FP8Format::E4M3 ? 8 : 15;
    int e = static_cast<int>(detail::floatBits(a) >> 23) - 127 - emax;
    return detail::bitsFloat(static_cast<uint32_t>(e + 127) << 23);
  }
  float s = a / fp8MaxFinite(f);
  if (rule == ScaleRule::FP32)
    return s;
  // Round up to a power of two: keep the exponent, add one unless the
  // mantissa is already zero. s is a normal float (>= 2.2e-15).
  uint32_t u = detail::floatBits(s);
  uint32_t exp = u >> 23;
  if ((u & 0x7fffffu) != 0)
    ++exp;
  return detail::bitsFloat(exp << 23);
}

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_FP8_H
