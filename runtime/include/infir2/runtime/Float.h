//===- Float.h - Storage formats to and from FP32, one copy -----*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The conversions between FP32 and the non-FP8 storage formats a trainer
// holds (BF16, IEEE half, E8M0 scales), used by the CPU kernels, the trainer
// driver (initialization, checkpoints) and the tests alike: one rounding
// routine per format. FP8 is in FP8.h. Narrowing rounds to nearest even;
// NaN stays NaN (quiet); widening is exact. Host code: the CUDA kernels use
// the hardware's conversions, checked against these by the GPU tests.
//
// The reference interpreter rounds through llvm::APFloat instead, on
// purpose: it is the independent oracle these routines are tested against.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_FLOAT_H
#define INFIR2_RUNTIME_FLOAT_H

#include "infir2/runtime/FP8.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace infir2::rt {

inline float bf16ToFloat(uint16_t v) {
  return detail::bitsFloat(uint32_t(v) << 16);
}

inline uint16_t floatToBF16(float f) {
  uint32_t u = detail::floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet
    return uint16_t((u >> 16) | 0x40);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f,
           man = h & 0x3ff;
  if (exp == 0)
    return (sign ? -1.0f : 1.0f) * std::ldexp(float(man), -24);
  if (exp == 31)
    return detail::bitsFloat(sign | 0x7f800000u | (man << 13));
  return detail::bitsFloat(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t floatToHalf(float f) {
  // Through the FP8 machinery's round-to-nearest-even, generalised: IEEE
  // half has 10 mantissa bits and bias 15.
  uint32_t u = detail::floatBits(f), sign = (u >> 16) & 0x8000;
  float a = std::fabs(f);
  if (std::isnan(f))
    return uint16_t(sign | 0x7e00);
  if (a >= 65520.0f)
    return uint16_t(sign | 0x7c00);
  if (a < std::ldexp(1.0f, -14)) // subnormal: multiples of 2^-24
    return uint16_t(sign | uint32_t(std::nearbyint(a * 16777216.0f)));
  uint32_t au = detail::floatBits(a);
  uint32_t r = detail::shiftRoundEven(au, 13) - (112u << 10);
  return uint16_t(sign | r);
}

inline float e8m0ToFloat(uint8_t v) {
  return v == 0xff ? std::numeric_limits<float>::quiet_NaN()
                   : std::ldexp(1.0f, int(v) - 127);
}

inline uint8_t floatToE8M0(float f) {
  int e = 0;
  std::frexp(f, &e); // f = m·2^e, m in [0.5, 1); pow2 scales are exact
  return uint8_t(std::clamp(e - 1 + 127, 0, 254));
}

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_FLOAT_H
