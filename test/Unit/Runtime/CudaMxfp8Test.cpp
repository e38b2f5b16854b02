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
  // Both power-of-two rules: pow2 (1) and the specification's floor (2).
  for (double rule : {1.0, 2.0})
    for (int64_t dtype : {INFIR2RT_F32, INFIR2RT_BF16}) {
      SCOPED_TRACE(testing::Message()
                   << (dtype == INFIR2RT_F32 ? "f32" : "bf16")
                   << " input, scale_rule " << rule);
      Call c;
      int in = c.add({2, 96, 320}, dtype);
      c.add({2, 96, 320}, INFIR2RT_E4M3);
      c.add({2, 96, 10}, INFIR2RT_E8M0);
      c.attrs({0.0, rule, 1, 1, 32});
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

// x [M, K] and w [N, K] in MX blocks, quantized on the CPU, then the GEMM
// on the GPU: refused before Blackwell, else against the exact product.
// M = 160 and N = 288 are not multiples of the scale tiles' 128 rows, and
// K / 32 = 7 not of their 4 columns: both paddings are laid out (the
// layout itself is MxTilesTest's, on the CPU).
TEST(CudaMxfp8, GemmOnBlackwellOrRefusedByName) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  constexpr int64_t M = 160, N = 288, K = 224, S = K / 32;
  std::mt19937_64 rng = seededRng();
  Call q1, q2;
  int x = q1.add({M, K}, INFIR2RT_F32);
  q1.add({M, K}, INFIR2RT_E4M3);
  q1.add({M, S}, INFIR2RT_E8M0);
  q1.attrs({0.0, 1.0, 1, 32});
  int w = q2.add({N, K}, INFIR2RT_F32);
  q2.add({N, K}, INFIR2RT_E4M3);
  q2.add({N, S}, INFIR2RT_E8M0);
  q2.attrs({0.0, 1.0, 1, 32});
  fill(q1, x, INFIR2RT_F32, M, K, rng);
  fill(q2, w, INFIR2RT_F32, N, K, rng);
  ASSERT_EQ(q1.run(infir2rt_quantize), 0);
  ASSERT_EQ(q2.run(infir2rt_quantize), 0);

  Call mm;
  int a = mm.add({M, K}, INFIR2RT_E4M3), as = mm.add({M, S}, INFIR2RT_E8M0),
      b = mm.add({N, K}, INFIR2RT_E4M3), bs = mm.add({N, S}, INFIR2RT_E8M0),
      y = mm.add({M, N}, INFIR2RT_F32);
  mm.attrs({1, 32, 1, 32, 0.0});
  std::memcpy(mm.u8(a), q1.u8(1), M * K);
  std::memcpy(mm.u8(as), q1.u8(2), M * S);
  std::memcpy(mm.u8(b), q2.u8(1), N * K);
  std::memcpy(mm.u8(bs), q2.u8(2), N * S);

  int32_t rc;
  std::string error;
  std::vector<uint8_t> onGpu =
      runOnGpu(mm, infir2rt_cuda_scaled_matmul, rc, error);
  if (majorVersion() < 10) {
    EXPECT_NE(rc, 0);
    EXPECT_NE(error.find("MXFP8 GEMMs (granularity=mxfp8) need a Blackwell "
                         "GPU (compute capability 10.0); this is "),
              std::string::npos)
        << error;
    std::printf("refused: %s\n", error.c_str());
    return;
  }
  ASSERT_EQ(rc, 0) << error;
  std::vector<uint8_t> onCpu = runOnCpu(mm, infir2rt_scaled_matmul);
  auto dequantized = [&](int o, int so, int64_t rows) {
    std::vector<double> d(rows * K);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t k = 0; k < K; ++k)
        d[i * K + k] = double(infir2::rt::e4m3ToFloat(mm.u8(o)[i * K + k])) *
                       infir2::rt::e8m0ToFloat(mm.u8(so)[i * S + k / 32]);
    return d;
  };
  std::vector<double> da = dequantized(a, as, M), db = dequantized(b, bs, N);
  auto errorVsExact = [&](const std::vector<uint8_t> &mem) {
    return errorVsExactProduct(
        reinterpret_cast<const float *>(mem.data() + mm.operands[y].first), da,
        db, M, N, K);
  };
  double cpu = errorVsExact(onCpu), gpu = errorVsExact(onGpu);
  std::printf("error / sum|a*b| against FP64: cpu %.3g, gpu %.3g\n", cpu, gpu);
  EXPECT_LE(cpu, 0x1p-15) << "CPU: FP32 sums of 224 products";
  EXPECT_LE(gpu, 0x1p-9) << "GPU: MXFP8 tensor-core sums of 224 products";
}

} // namespace
