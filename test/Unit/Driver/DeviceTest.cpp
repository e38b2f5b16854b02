//===- DeviceTest.cpp - Which FP8 GEMMs a device lacks --------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Device::open picks a GPU only if it runs the plan's FP8 GEMM scalings
// (the manifest's fp8_gemms); missingFp8Gemms says what is lacking, which
// --device cuda reports and --device auto gives as the reason it trains on
// the CPU. The GPU side (an MXFP8 trainer on an H100) is trainer-gpu.test's.
//
//===----------------------------------------------------------------------===//

#include "device/Device.h"

#include <gtest/gtest.h>

using infir2::rt::missingFp8Gemms;

namespace {

constexpr uint32_t kBlock = INFIR2RT_FP8_GEMM_BLOCK128,
                   kMx = INFIR2RT_FP8_GEMM_MX,
                   kE5M2Pair = INFIR2RT_FP8_GEMM_E5M2_PAIR;

TEST(Device, MissingFp8GemmsNameTheGranularityAndTheGpu) {
  const std::string block = "this trainer's FP8 GEMMs in 128-wide blocks "
                            "(granularity=blockwise) need a Hopper GPU "
                            "(compute capability 9.0)";
  const std::string mx = "this trainer's FP8 GEMMs in MX blocks "
                         "(granularity=mxfp8) need a Blackwell GPU (compute "
                         "capability 10.0)";
  // Nothing needed, or everything had: nothing lacking.
  EXPECT_EQ(missingFp8Gemms(0, 0), "");
  EXPECT_EQ(missingFp8Gemms(kBlock, kBlock), "");
  EXPECT_EQ(missingFp8Gemms(kMx, kMx), "");
  EXPECT_EQ(missingFp8Gemms(kBlock | kMx, ~0u), "");
  // An MXFP8 trainer on Hopper, a blockwise one on Blackwell.
  EXPECT_EQ(missingFp8Gemms(kMx, kBlock), mx);
  EXPECT_EQ(missingFp8Gemms(kBlock, kMx), block);
  EXPECT_EQ(missingFp8Gemms(kBlock | kMx, 0), block + "; " + mx);
  // E5M2 x E5M2 (the e5m2 option): no GPU runs it, the CPU does.
  const std::string pair = "this trainer has FP8 GEMMs with both operands in "
                           "E5M2 (the recipe option e5m2), which cuBLASLt "
                           "does not run: the CPU backend does";
  EXPECT_EQ(missingFp8Gemms(kBlock | kE5M2Pair, kBlock), pair);
  EXPECT_EQ(missingFp8Gemms(kE5M2Pair, kBlock | kMx), pair);
  EXPECT_EQ(missingFp8Gemms(kE5M2Pair, ~0u), "");
}

TEST(Device, TheCpuBackendRunsEveryScaling) {
  // A null fp8_gemms means all of them (the CPU emulates each).
  EXPECT_EQ(infir2rt_cpu_backend()->fp8_gemms, nullptr);
}

} // namespace
