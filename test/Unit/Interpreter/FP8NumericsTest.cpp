//===- FP8NumericsTest.cpp - Interpreter FP8 rounding vs CUDA -------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The interpreter converts to FP8 through LLVM's APFloat; CUDA's host-side
// __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...) is the independent oracle.
// Every float whose magnitude lies in FP8's range (subnormals to past the
// saturation point) is compared at a stride of 13 bit patterns, plus every
// pattern around the rounding boundaries at the ends of the range and every
// special value: results must be identical (tolerance: zero).
//
//===----------------------------------------------------------------------===//

#include "infir2/Interpreter/Interpreter.h"
#include "infir2/runtime/FP8.h"

#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using infir2::interp::computeFloorScale;
using infir2::interp::computeScale;
using infir2::interp::roundToFP8;

namespace {

float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

double cudaRound(float x, bool e5m2) {
  if (e5m2)
    return static_cast<float>(__nv_fp8_e5m2(x));
  return static_cast<float>(__nv_fp8_e4m3(x));
}

void expectSameAsCuda(float x, bool e5m2) {
  double expected = cudaRound(x, e5m2), actual = roundToFP8(x, e5m2);
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(actual)) << "x = " << x;
    return;
  }
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  ASSERT_EQ(actual, expected) << "x = " << x << " (bits 0x" << std::hex << bits
                              << ")" << (e5m2 ? " e5m2" : " e4m3");
  ASSERT_EQ(std::signbit(actual), std::signbit(expected)) << "x = " << x;
}

void sweep(bool e5m2) {
  // |x| from half the smallest subnormal (2^-10 resp. 2^-17) to 2^17.
  uint32_t lo = e5m2 ? 0x37000000u : 0x3a800000u; // 2^-17, 2^-10
  uint32_t hi = 0x48000000u;                      // 2^17
  uint64_t checked = 0;
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t bits = lo; bits < hi; bits += 13, ++checked)
      expectSameAsCuda(fromBits(sign | bits), e5m2);
    // Every pattern next to the ends of the range, where rounding to zero
    // and saturation happen.
    for (uint32_t bits = lo - 4096; bits < lo + 4096; ++bits, ++checked)
      expectSameAsCuda(fromBits(sign | bits), e5m2);
    uint32_t maxBits = e5m2 ? 0x47600000u : 0x43e00000u; // 57344, 448
    for (uint32_t bits = maxBits - 4096; bits < maxBits + 4096;
         ++bits, ++checked)
      expectSameAsCuda(fromBits(sign | bits), e5m2);
  }
  float specials[] = {0.0f,
                      -0.0f,
                      std::numeric_limits<float>::infinity(),
                      -std::numeric_limits<float>::infinity(),
                      std::numeric_limits<float>::quiet_NaN(),
                      std::numeric_limits<float>::denorm_min(),
                      std::numeric_limits<float>::max(),
                      -std::numeric_limits<float>::max()};
  for (float x : specials)
    expectSameAsCuda(x, e5m2);
  EXPECT_GT(checked, 1000000u);
}

TEST(FP8Numerics, E4M3MatchesCudaSatfinite) { sweep(/*e5m2=*/false); }
TEST(FP8Numerics, E5M2MatchesCudaSatfinite) { sweep(/*e5m2=*/true); }

TEST(FP8Numerics, KnownE4M3Values) {
  // Worked out from the OCP FP8 spec: 3 mantissa bits, so values in [1, 2)
  // are spaced 1/8; ties go to the even mantissa.
  EXPECT_EQ(roundToFP8(1.0625f, false), 1.0);  // tie between 1 and 1.125
  EXPECT_EQ(roundToFP8(1.1875f, false), 1.25); // tie between 1.125 and 1.25
  EXPECT_EQ(roundToFP8(500.0f, false), 448.0); // saturates
  EXPECT_EQ(roundToFP8(-1e30f, false), -448.0);
  EXPECT_EQ(roundToFP8(std::ldexp(1.0f, -9), false), std::ldexp(1.0, -9));
  EXPECT_EQ(roundToFP8(std::ldexp(1.0f, -11), false),
            0.0); // below half of 2^-9
}

TEST(ScaleRule, ZeroAmaxGivesOne) {
  EXPECT_EQ(computeScale(0.0f, 448.0f, true), 1.0f);
  EXPECT_EQ(computeScale(0.0f, 448.0f, false), 1.0f);
}

TEST(ScaleRule, PowerOfTwoRoundsUp) {
  EXPECT_EQ(computeScale(448.0f, 448.0f, true), 1.0f); // exactly 2^0
  EXPECT_EQ(computeScale(449.0f, 448.0f, true), 2.0f); // just above: 2^1
  EXPECT_EQ(computeScale(224.0f, 448.0f, true), 0.5f);
  EXPECT_EQ(computeScale(300.0f, 448.0f, true), 1.0f); // 0.67 -> 2^0
  EXPECT_EQ(computeScale(3.0f, 448.0f, false), 3.0f / 448.0f);
}

TEST(ScaleRule, TinyAmaxIsFlooredNeverZero) {
  // The case from the design notes: an output-gradient group with amax
  // 2.2e-43 (an FP32 subnormal). amax / 448 underflows FP32 to 0; the floor
  // gives 1e-12 / 448 ~ 2.23e-15, rounded up to 2^-48.
  float tiny = 2.2e-43f;
  ASSERT_EQ(tiny / 448.0f, 0.0f) << "the naive scale must underflow here";
  EXPECT_EQ(computeScale(tiny, 448.0f, true), std::ldexp(1.0f, -48));
  EXPECT_EQ(computeScale(tiny, 448.0f, false), 1e-12f / 448.0f);
  EXPECT_GT(
      computeScale(std::numeric_limits<float>::denorm_min(), 57344.0f, true),
      0.0f);
}

TEST(ScaleRule, HugeAmaxStaysFinite) {
  float s = computeScale(std::numeric_limits<float>::max(), 448.0f, true);
  EXPECT_TRUE(std::isfinite(s));
  EXPECT_LE(std::numeric_limits<float>::max() / s, 448.0f);
}

TEST(ScaleRule, InterpreterAgreesWithRuntime) {
  // Two implementations of the contract's scale rules (frexp/ldexp in the
  // interpreter, exponent bits in the runtime) over every 997th finite
  // non-negative float, both formats, all three rules: identical floats.
  using infir2::rt::ScaleRule;
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 997) {
    float amax = fromBits(bits);
    for (auto f : {infir2::rt::FP8Format::E4M3, infir2::rt::FP8Format::E5M2}) {
      for (bool pow2 : {true, false})
        ASSERT_EQ(computeScale(amax, infir2::rt::fp8MaxFinite(f), pow2),
                  infir2::rt::fp8Scale(
                      amax, f, pow2 ? ScaleRule::Pow2 : ScaleRule::FP32))
            << "amax " << amax << " pow2 " << pow2;
      int emax = f == infir2::rt::FP8Format::E4M3 ? 8 : 15;
      ASSERT_EQ(computeFloorScale(amax, emax),
                infir2::rt::fp8Scale(amax, f, ScaleRule::Floor))
          << "amax " << amax << " floor";
    }
  }
}

} // namespace
