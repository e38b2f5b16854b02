//===- FP8Test.cpp - The runtime's FP8 math against CUDA's ----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// CUDA's own host-side conversions (cuda_fp8.h, no GPU needed) are the
// oracle. Every one of the 2^32 float bit patterns is converted by CUDA and
// by both of ours (the reference and the branch-free one the CPU quantizers
// run) and the bytes must be identical (tolerance: zero); every FP8 code
// must decode to the same float.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/FP8.h"

#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

using namespace infir2::rt;

namespace {

uint8_t cudaConvert(float x, FP8Format f) {
  return __nv_cvt_float_to_fp8(x, __NV_SATFINITE,
                               f == FP8Format::E4M3 ? __NV_E4M3 : __NV_E5M2);
}

/// Compares all 2^32 inputs, split across the machine's cores.
void exhaustive(FP8Format f) {
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<uint64_t> mismatches{0}, firstBad{~0ull};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      uint64_t begin = (1ull << 32) * t / threads,
               end = (1ull << 32) * (t + 1) / threads;
      for (uint64_t i = begin; i < end; ++i) {
        float x = detail::bitsFloat(static_cast<uint32_t>(i));
        uint8_t branchless = f == FP8Format::E4M3 ? floatToE4M3Branchless(x)
                                                  : floatToE5M2Branchless(x);
        uint8_t cuda = cudaConvert(x, f);
        if (floatToFP8(x, f) != cuda || branchless != cuda) {
          if (mismatches++ == 0)
            firstBad = i;
        }
      }
    });
  for (std::thread &th : pool)
    th.join();
  EXPECT_EQ(mismatches.load(), 0u)
      << "first mismatch at float bits 0x" << std::hex << firstBad.load()
      << ": ours 0x"
      << unsigned(floatToFP8(detail::bitsFloat(uint32_t(firstBad.load())), f))
      << " (branch-free 0x"
      << unsigned(f == FP8Format::E4M3
                      ? floatToE4M3Branchless(
                            detail::bitsFloat(uint32_t(firstBad.load())))
                      : floatToE5M2Branchless(
                            detail::bitsFloat(uint32_t(firstBad.load()))))
      << ")"
      << ", CUDA 0x"
      << unsigned(cudaConvert(detail::bitsFloat(uint32_t(firstBad.load())), f));
}

TEST(RuntimeFP8, E4M3AllFloatsMatchCuda) { exhaustive(FP8Format::E4M3); }
TEST(RuntimeFP8, E5M2AllFloatsMatchCuda) { exhaustive(FP8Format::E5M2); }

TEST(RuntimeFP8, AllCodesDecodeLikeCuda) {
  for (unsigned code = 0; code < 256; ++code) {
    __nv_fp8_e4m3 a;
    a.__x = static_cast<__nv_fp8_storage_t>(code);
    __nv_fp8_e5m2 b;
    b.__x = static_cast<__nv_fp8_storage_t>(code);
    float ea = static_cast<float>(a), eb = static_cast<float>(b);
    float ra = e4m3ToFloat(code), rb = e5m2ToFloat(code);
    if (std::isnan(ea)) {
      EXPECT_TRUE(std::isnan(ra)) << code;
    } else {
      EXPECT_EQ(detail::floatBits(ra), detail::floatBits(ea)) << code;
    }
    if (std::isnan(eb)) {
      EXPECT_TRUE(std::isnan(rb)) << code;
    } else {
      EXPECT_EQ(detail::floatBits(rb), detail::floatBits(eb)) << code;
    }
  }
}

TEST(RuntimeFP8, RoundTripOfEveryCode) {
  // Every finite code converts back to itself: the conversion is exact on
  // the values it can produce.
  for (unsigned code = 0; code < 256; ++code) {
    if ((code & 0x7f) != 0x7f) {
      EXPECT_EQ(floatToE4M3(e4m3ToFloat(code)), code) << code;
    }
    if ((code & 0x7f) < 0x7c) {
      EXPECT_EQ(floatToE5M2(e5m2ToFloat(code)), code) << code;
    }
  }
}

TEST(RuntimeFP8, ScaleRule) {
  // Worked by hand from the numerics contract.
  EXPECT_EQ(fp8Scale(0.0f, FP8Format::E4M3, ScaleRule::Pow2), 1.0f);
  EXPECT_EQ(fp8Scale(448.0f, FP8Format::E4M3, ScaleRule::Pow2), 1.0f);
  EXPECT_EQ(fp8Scale(449.0f, FP8Format::E4M3, ScaleRule::Pow2), 2.0f);
  EXPECT_EQ(fp8Scale(57344.0f, FP8Format::E5M2, ScaleRule::Pow2), 1.0f);
  EXPECT_EQ(fp8Scale(3.0f, FP8Format::E4M3, ScaleRule::FP32), 3.0f / 448.0f);
  // amax 2.2e-43 (an FP32 subnormal) floors to 1e-12: 1e-12/448 in
  // (2^-49, 2^-48] gives 2^-48, never 0.
  EXPECT_EQ(fp8Scale(2.2e-43f, FP8Format::E4M3, ScaleRule::Pow2),
            std::ldexp(1.0f, -48));
  float huge = fp8Scale(std::numeric_limits<float>::max(), FP8Format::E4M3,
                        ScaleRule::Pow2);
  EXPECT_TRUE(std::isfinite(huge));
}

TEST(RuntimeFP8, FloorScaleRule) {
  // The OCP MX specification's 2^(floor(log2 amax) - emax), emax 8 (E4M3)
  // or 15 (E5M2), by hand.
  EXPECT_EQ(fp8Scale(0.0f, FP8Format::E4M3, ScaleRule::Floor), 1.0f);
  EXPECT_EQ(fp8Scale(448.0f, FP8Format::E4M3, ScaleRule::Floor), 1.0f);
  EXPECT_EQ(fp8Scale(256.0f, FP8Format::E4M3, ScaleRule::Floor), 1.0f);
  // 511.9 / 1 saturates to 448; pow2 would take 2 and not saturate.
  EXPECT_EQ(fp8Scale(511.9f, FP8Format::E4M3, ScaleRule::Floor), 1.0f);
  EXPECT_EQ(fp8Scale(511.9f, FP8Format::E4M3, ScaleRule::Pow2), 2.0f);
  EXPECT_EQ(fp8Scale(512.0f, FP8Format::E4M3, ScaleRule::Floor), 2.0f);
  EXPECT_EQ(fp8Scale(255.9f, FP8Format::E4M3, ScaleRule::Floor), 0.5f);
  EXPECT_EQ(fp8Scale(65535.0f, FP8Format::E5M2, ScaleRule::Floor), 1.0f);
  EXPECT_EQ(fp8Scale(3.0f, FP8Format::E5M2, ScaleRule::Floor),
            std::ldexp(1.0f, 1 - 15));
  // amax below 1e-12 is taken as 1e-12: floor(log2 1e-12) = -40.
  EXPECT_EQ(fp8Scale(2.2e-43f, FP8Format::E4M3, ScaleRule::Floor),
            std::ldexp(1.0f, -48));
  EXPECT_EQ(fp8Scale(std::numeric_limits<float>::max(), FP8Format::E4M3,
                     ScaleRule::Floor),
            std::ldexp(1.0f, 127 - 8));
}

} // namespace
