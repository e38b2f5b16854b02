//===- CudaMxfp8Test.cpp - MXFP8 on the GPU against the CPU backend -------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// MX blocks (1x32 along K, E8M0 scales) on the CUDA backend:
// - the quantizers (plain and dual) write the CPU backend's FP8 codes and
//   E8M0 scales byte for byte, on any GPU (the CPU backend equals the
//   interpreter and the OCP MX specification: MxFp8Test,
//   mx-spec-oracle.test);
// - the GEMM runs through cuBLASLt's VEC32_UE8M0 mode on Blackwell
//   (compute capability 10.0+), where it is checked against the exact FP64
//   product with CudaGemmTest's bound (2^-9 of Σ|a·b|, for the tensor
//   cores' block sums), and is refused by name on older GPUs (Hopper has
//   no MXFP8 tensor cores).
// Skipped without a usable GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"
#include "infir2/runtime/FP8.h"
#include "infir2/runtime/Float.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

namespace {

using namespace infir2::test;

TEST(CudaMxfp8, QuantizeMatchesTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  for (int64_t dtype : {INFIR2RT_F32, INFIR2RT_BF16}) {
    SCOPED_TRACE(dtype == INFIR2RT_F32 ? "f32 input" : "bf16 input");
    Call c;
    int in = c.add({2, 96, 320}, dtype);
    c.add({2, 96, 320}, INFIR2RT_E4M3);
    c.add({2, 96, 10}, INFIR2RT_E8M0);
    c.attrs({0.0, 1.0, 1, 1, 32});
    fill(c, in, dtype, 192, 320, rng);
    compare(c, infir2rt_quantize, infir2rt_cuda_quantize);
  }
}

// Both layouts: MX blocks along the features, and the [K, T] copy in MX
// blocks along the tokens, in E5M2.
TEST(CudaMxfp8, QuantizeDualMatchesTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  Call c;
  int in = c.add({2, 64, 160}, INFIR2RT_BF16);
  c.add({2, 64, 160}, INFIR2RT_E5M2);
  c.add({2, 64, 5}, INFIR2RT_E8M0);
  c.add({160, 128}, INFIR2RT_E5M2);
  c.add({160, 4}, INFIR2RT_E8M0);
  c.attrs({1.0, 1.0, 1, 1, 32, 1, 32});
  fill(c, in, INFIR2RT_BF16, 128, 160, rng);
  compare(c, infir2rt_quantize_dual, infir2rt_cuda_quantize_dual);
}

/// The compute capability's major number of the current GPU.
int majorVersion() {
  int device = 0, major = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  return major;
}

// x [256, 512] and w [384, 512] in MX blocks, quantized on the CPU, then
// the GEMM on the GPU: refused before Blackwell, else against the exact
// product. M = 256 and N = 384 are not multiples of the 128 x 4 scale
// tiles' padding in K / 32 = 16 (a multiple of 4); N = 384 is 3 row tiles.
TEST(CudaMxfp8, GemmOnBlackwellOrRefusedByName) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  Call q1, q2;
  int x = q1.add({256, 512}, INFIR2RT_F32);
  q1.add({256, 512}, INFIR2RT_E4M3);
  q1.add({256, 16}, INFIR2RT_E8M0);
  q1.attrs({0.0, 1.0, 1, 32});
  int w = q2.add({384, 512}, INFIR2RT_F32);
  q2.add({384, 512}, INFIR2RT_E4M3);
  q2.add({384, 16}, INFIR2RT_E8M0);
  q2.attrs({0.0, 1.0, 1, 32});
  fill(q1, x, INFIR2RT_F32, 256, 512, rng);
  fill(q2, w, INFIR2RT_F32, 384, 512, rng);
  ASSERT_EQ(q1.run(infir2rt_quantize), 0);
  ASSERT_EQ(q2.run(infir2rt_quantize), 0);

  Call mm;
  int a = mm.add({256, 512}, INFIR2RT_E4M3),
      as = mm.add({256, 16}, INFIR2RT_E8M0),
      b = mm.add({384, 512}, INFIR2RT_E4M3),
      bs = mm.add({384, 16}, INFIR2RT_E8M0),
      y = mm.add({256, 384}, INFIR2RT_F32);
  mm.attrs({1, 32, 1, 32, 0.0});
  std::memcpy(mm.u8(a), q1.u8(1), 256 * 512);
  std::memcpy(mm.u8(as), q1.u8(2), 256 * 16);
  std::memcpy(mm.u8(b), q2.u8(1), 384 * 512);
  std::memcpy(mm.u8(bs), q2.u8(2), 384 * 16);

  int32_t rc;
  std::string error;
  std::vector<uint8_t> onGpu =
      runOnGpu(mm, infir2rt_cuda_scaled_matmul, rc, error);
  if (majorVersion() < 10) {
    EXPECT_NE(rc, 0);
    EXPECT_NE(error.find("MXFP8 GEMMs (granularity=mxfp8) need a Blackwell "
                         "GPU (compute capability 10.0 or newer); this is "),
              std::string::npos)
        << error;
    std::printf("refused: %s\n", error.c_str());
    return;
  }
  ASSERT_EQ(rc, 0) << error;
  std::vector<uint8_t> onCpu = runOnCpu(mm, infir2rt_scaled_matmul);
  auto dequantized = [&](int o, int so, int64_t rows) {
    std::vector<double> d(rows * 512);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t k = 0; k < 512; ++k)
        d[i * 512 + k] =
            double(infir2::rt::e4m3ToFloat(mm.u8(o)[i * 512 + k])) *
            infir2::rt::e8m0ToFloat(mm.u8(so)[i * 16 + k / 32]);
    return d;
  };
  std::vector<double> da = dequantized(a, as, 256),
                      db = dequantized(b, bs, 384);
  auto errorVsExact = [&](const std::vector<uint8_t> &mem) {
    return errorVsExactProduct(
        reinterpret_cast<const float *>(mem.data() + mm.operands[y].first), da,
        db, 256, 384, 512);
  };
  double cpu = errorVsExact(onCpu), gpu = errorVsExact(onGpu);
  std::printf("error / sum|a*b| against FP64: cpu %.3g, gpu %.3g\n", cpu, gpu);
  EXPECT_LE(cpu, 0x1p-15) << "CPU: FP32 sums of 512 products";
  EXPECT_LE(gpu, 0x1p-9) << "GPU: MXFP8 tensor-core sums of 512 products";
}

} // namespace
