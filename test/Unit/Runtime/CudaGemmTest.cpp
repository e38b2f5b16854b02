//===- CudaGemmTest.cpp - GPU GEMMs against the CPU backend ---------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The cuBLASLt FP8 GEMM must agree with the CPU backend's (BLAS on exactly
// dequantized operands) to 1e-4 of each output row's RMS: both accumulate
// K = 512 products in FP32, in different orders, each off by about
// sqrt(K)·2^-24 ≈ 1.4e-6 of Σ|a·b| ≈ 14 times the RMS (up to 1.4e-5 of the
// RMS observed for the CPU against FP64, KernelsVsInterpreterTest), and the
// two errors add. The BF16/FP32 GEMM likewise.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace infir2::test;

struct GemmVariant {
  const char *name;
  std::vector<double> blocks; // lhs block then rhs block
  std::vector<int64_t> lhsScale, rhsScale;
};

void PrintTo(const GemmVariant &v, std::ostream *os) { *os << v.name; }

class CudaScaledMatmul : public ::testing::TestWithParam<GemmVariant> {};

TEST_P(CudaScaledMatmul, MatchesTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  const GemmVariant &v = GetParam();
  std::mt19937_64 rng = seededRng();
  // lhs [256, 512] and rhs [384, 512], quantized on the CPU, then one GEMM
  // on each side.
  Call q1, q2;
  int x = q1.add({256, 512}, INFIR2RT_F32),
      xq = q1.add({256, 512}, INFIR2RT_E4M3),
      xs = q1.add(v.lhsScale, INFIR2RT_F32);
  std::vector<double> a1 = {0.0, 1.0, v.blocks[0], v.blocks[1]};
  q1.attrs(a1);
  int w = q2.add({384, 512}, INFIR2RT_F32),
      wq = q2.add({384, 512}, INFIR2RT_E4M3),
      ws = q2.add(v.rhsScale, INFIR2RT_F32);
  q2.attrs({0.0, 1.0, v.blocks[2], v.blocks[3]});
  fill(q1, x, INFIR2RT_F32, 256, 512, rng);
  fill(q2, w, INFIR2RT_F32, 384, 512, rng);
  infir2rt_context ctx{};
  ctx.regions[0] = ctx.regions[1] = q1.host.data();
  ASSERT_EQ(infir2rt_quantize(&ctx, q1.desc.data(), "q"), 0)
      << infir2::rt::callError(ctx);
  ctx.regions[0] = ctx.regions[1] = q2.host.data();
  ASSERT_EQ(infir2rt_quantize(&ctx, q2.desc.data(), "q"), 0)
      << infir2::rt::callError(ctx);

  Call mm;
  int a = mm.add({256, 512}, INFIR2RT_E4M3),
      as = mm.add(v.lhsScale, INFIR2RT_F32),
      b = mm.add({384, 512}, INFIR2RT_E4M3),
      bs = mm.add(v.rhsScale, INFIR2RT_F32),
      y = mm.add({256, 384}, INFIR2RT_F32);
  mm.attrs(v.blocks);
  auto copy = [](Call &to, int ti, Call &from, int fi) {
    std::memcpy(to.host.data() + to.operands[ti].first,
                from.host.data() + from.operands[fi].first,
                from.operands[fi].second);
  };
  copy(mm, a, q1, xq);
  copy(mm, as, q1, xs);
  copy(mm, b, q2, wq);
  copy(mm, bs, q2, ws);

  std::vector<uint8_t> onCpu = runOnCpu(mm, infir2rt_scaled_matmul);
  int32_t rc;
  std::string error;
  std::vector<uint8_t> onGpu =
      runOnGpu(mm, infir2rt_cuda_scaled_matmul, rc, error);
  ASSERT_EQ(rc, 0) << error;
  double worst = worstRowError(mm, y, onCpu, onGpu, 256, 384);
  EXPECT_LE(worst, 1e-4) << "worst error relative to its row's RMS";
}

INSTANTIATE_TEST_SUITE_P(
    Modes, CudaScaledMatmul,
    ::testing::Values(
        // fprop: 1x128 activations, 128x128 weights (VEC128 x BLK128x128).
        GemmVariant{"vec_blk", {1, 128, 128, 128}, {256, 4}, {3, 4}},
        // wgrad: both operands in 1x128 groups (VEC128 x VEC128).
        GemmVariant{"vec_vec", {1, 128, 1, 128}, {256, 4}, {384, 4}},
        // tensorwise: one scale per operand (scalar mode).
        GemmVariant{"tensorwise", {256, 512, 384, 512}, {1, 1}, {1, 1}}),
    [](const ::testing::TestParamInfo<GemmVariant> &info) {
      return std::string(info.param.name);
    });

// infir2.matmul's forms (the transposes autodiff emits, a batched lhs with a
// shared weight), BF16 in, FP32 out, against the CPU backend's BLAS GEMM on
// the same BF16 values: both accumulate in FP32, so within 1e-4 of each
// output row's RMS (K = 512; the reasoning of the FP8 GEMM's bound above).
TEST(CudaMatmul, FormsMatchTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  struct Form {
    bool ta, tb;
  };
  for (Form f : {Form{false, true}, Form{false, false}, Form{true, false}}) {
    SCOPED_TRACE(std::string("transpose_lhs=") + (f.ta ? "1" : "0") +
                 " transpose_rhs=" + (f.tb ? "1" : "0"));
    const int64_t B = 2, M = 128, K = 512, N = 256;
    Call c;
    std::vector<int64_t> lhs =
        f.ta ? std::vector<int64_t>{B, K, M} : std::vector<int64_t>{B, M, K};
    std::vector<int64_t> rhs =
        f.tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N};
    int a = c.add(lhs, INFIR2RT_BF16), b = c.add(rhs, INFIR2RT_BF16);
    int y = c.add({B, M, N}, INFIR2RT_F32);
    c.attrs({f.ta ? 1.0 : 0.0, f.tb ? 1.0 : 0.0});
    fill(c, a, INFIR2RT_BF16, B * M, K, rng);
    fill(c, b, INFIR2RT_BF16, N, K, rng);
    std::vector<uint8_t> onCpu = runOnCpu(c, infir2rt_matmul);
    int32_t rc;
    std::string error;
    std::vector<uint8_t> onGpu = runOnGpu(c, infir2rt_cuda_matmul, rc, error);
    ASSERT_EQ(rc, 0) << error;
    double worst = worstRowError(c, y, onCpu, onGpu, B * M, N);
    EXPECT_LE(worst, 1e-4) << "worst error relative to its row's RMS";
  }
}

} // namespace
