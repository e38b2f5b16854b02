//===- CudaQuantizeTest.cpp - GPU quantizers against the CPU backend ------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA quantizers (plain, dual, fused into RMSNorm and SwiGLU), amax and
// dequantize must reproduce the CPU backend bit for bit (which in turn
// matches the interpreter and CUDA's own conversions): same descriptors, same
// attributes, data and scales compared byte for byte. Whole 128 x 128 tiles
// take the one-pass kernel (TileQuantize.cu), other shapes the three passes;
// both are covered.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include "infir2/runtime/Descriptor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace infir2::test;

struct Variant {
  int64_t dtype;
  bool e5m2, pow2;
};

void PrintTo(const Variant &v, std::ostream *os) {
  *os << (v.dtype == INFIR2RT_F32 ? "f32" : "bf16")
      << (v.e5m2 ? " e5m2" : " e4m3") << (v.pow2 ? " pow2" : " fp32");
}

class CudaQuantize : public ::testing::TestWithParam<Variant> {};

TEST_P(CudaQuantize, DualMatchesTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  Variant v = GetParam();
  std::mt19937_64 rng = seededRng();
  // A [2, 256, 384] activation: 1x128 row groups, and the [384, 512]
  // column-wise copy in 1x128 groups along tokens.
  Call c;
  int64_t fmt = v.e5m2 ? INFIR2RT_E5M2 : INFIR2RT_E4M3;
  int in = c.add({2, 256, 384}, v.dtype);
  c.add({2, 256, 384}, fmt);
  c.add({2, 256, 3}, INFIR2RT_F32);
  c.add({384, 512}, fmt);
  c.add({384, 4}, INFIR2RT_F32);
  c.attrs({v.e5m2 ? 1.0 : 0.0, v.pow2 ? 1.0 : 0.0, 1, 1, 128, 1, 128});
  fill(c, in, v.dtype, 512, 384, rng);
  compare(c, infir2rt_quantize_dual, infir2rt_cuda_quantize_dual);
}

TEST_P(CudaQuantize, BlocksMatchTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  Variant v = GetParam();
  std::mt19937_64 rng = seededRng();
  // A [384, 512] weight in 128x128 blocks.
  Call c;
  int in = c.add({384, 512}, v.dtype);
  c.add({384, 512}, v.e5m2 ? INFIR2RT_E5M2 : INFIR2RT_E4M3);
  c.add({3, 4}, INFIR2RT_F32);
  c.attrs({v.e5m2 ? 1.0 : 0.0, v.pow2 ? 1.0 : 0.0, 128, 128});
  fill(c, in, v.dtype, 384, 512, rng);
  compare(c, infir2rt_quantize, infir2rt_cuda_quantize);
}

TEST_P(CudaQuantize, DualBlocksMatchTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  Variant v = GetParam();
  std::mt19937_64 rng = seededRng();
  // A [384, 512] weight in 128x128 blocks, and its transposed copy.
  Call c;
  int64_t fmt = v.e5m2 ? INFIR2RT_E5M2 : INFIR2RT_E4M3;
  int in = c.add({384, 512}, v.dtype);
  c.add({384, 512}, fmt);
  c.add({3, 4}, INFIR2RT_F32);
  c.add({512, 384}, fmt);
  c.add({4, 3}, INFIR2RT_F32);
  c.attrs({v.e5m2 ? 1.0 : 0.0, v.pow2 ? 1.0 : 0.0, 128, 128, 128, 128});
  fill(c, in, v.dtype, 384, 512, rng);
  compare(c, infir2rt_quantize_dual, infir2rt_cuda_quantize_dual);
}

// Rows that are not a multiple of the 128 x 128 tiles: the three passes.
TEST_P(CudaQuantize, RaggedRowsMatchTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  Variant v = GetParam();
  std::mt19937_64 rng = seededRng();
  Call c;
  int in = c.add({2, 96, 384}, v.dtype);
  c.add({2, 96, 384}, v.e5m2 ? INFIR2RT_E5M2 : INFIR2RT_E4M3);
  c.add({2, 96, 3}, INFIR2RT_F32);
  c.attrs({v.e5m2 ? 1.0 : 0.0, v.pow2 ? 1.0 : 0.0, 1, 1, 128});
  fill(c, in, v.dtype, 192, 384, rng);
  compare(c, infir2rt_quantize, infir2rt_cuda_quantize);
}

INSTANTIATE_TEST_SUITE_P(Variants, CudaQuantize,
                         ::testing::Values(Variant{INFIR2RT_F32, false, true},
                                           Variant{INFIR2RT_BF16, false, true},
                                           Variant{INFIR2RT_BF16, true, true},
                                           Variant{INFIR2RT_F32, false, false}),
                         [](const ::testing::TestParamInfo<Variant> &info) {
                           const Variant &v = info.param;
                           return std::string(v.dtype == INFIR2RT_F32
                                                  ? "f32"
                                                  : "bf16") +
                                  (v.e5m2 ? "_e5m2" : "_e4m3") +
                                  (v.pow2 ? "_pow2" : "_fp32");
                         });

// amax and dequantize are exact operations: byte-identical to the CPU.
TEST(CudaFP8, AmaxAndDequantizeMatchTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  {
    Call c;
    int in = c.add({256, 384}, INFIR2RT_BF16);
    c.add({2, 3}, INFIR2RT_F32);
    c.attrs({128, 128});
    fill(c, in, INFIR2RT_BF16, 256, 384, rng);
    compare(c, infir2rt_amax, infir2rt_cuda_amax);
  }
  {
    Call q;
    int in = q.add({256, 384}, INFIR2RT_F32),
        data = q.add({256, 384}, INFIR2RT_E4M3),
        scale = q.add({256, 3}, INFIR2RT_F32);
    q.attrs({0.0, 1.0, 1, 128});
    fill(q, in, INFIR2RT_F32, 256, 384, rng);
    std::vector<uint8_t> quantized = runOnCpu(q, infir2rt_quantize);
    Call c;
    int d = c.add({256, 384}, INFIR2RT_E4M3), s = c.add({256, 3}, INFIR2RT_F32);
    c.add({256, 384}, INFIR2RT_F32);
    c.attrs({1, 128});
    std::memcpy(c.host.data() + c.operands[d].first,
                quantized.data() + q.operands[data].first, 256 * 384);
    std::memcpy(c.host.data() + c.operands[s].first,
                quantized.data() + q.operands[scale].first, 256 * 3 * 4);
    compare(c, infir2rt_dequantize, infir2rt_cuda_dequantize);
  }
}

TEST(CudaQuantizeErrors, NonFiniteBlockIsRefused) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  Call c;
  int in = c.add({2, 256}, INFIR2RT_F32);
  c.add({2, 256}, INFIR2RT_E4M3);
  c.add({2, 2}, INFIR2RT_F32);
  c.attrs({0.0, 1.0, 1, 128});
  float *x = reinterpret_cast<float *>(c.host.data() + c.operands[in].first);
  for (int i = 0; i < 512; ++i)
    x[i] = 0.5f;
  x[256 + 130] = NAN; // row 1, second group: scale block 3
  int32_t rc;
  std::string error;
  runOnGpu(c, infir2rt_cuda_quantize, rc, error);
  EXPECT_EQ(rc, INFIR2RT_NONFINITE); // the status a trainer skips a step on
  // The CPU backend's message (KernelsVsInterpreterTest checks the CPU's).
  EXPECT_EQ(error, "gpu: non-finite amax (nan) in scale block 3: refusing to "
                   "quantize it");
}

// The one-pass tile kernel flags a non-finite amax as the CPU backend does:
// the same status, the same block (and, for quantize_dual, names the copy). Infinity in row 5,
// column 200 of a [256, 384] tensor: row-wise group 5·3 + 1 = 16, and
// column-wise group 200·2 of [384, 256]; the row-wise copy's comes first.
TEST(CudaQuantizeErrors, NonFiniteTileIsRefusedAsOnTheCpu) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  for (bool nan : {false, true}) {
    Call c;
    int in = c.add({256, 384}, INFIR2RT_F32);
    c.add({256, 384}, INFIR2RT_E4M3);
    c.add({256, 3}, INFIR2RT_F32);
    c.add({384, 256}, INFIR2RT_E4M3);
    c.add({384, 2}, INFIR2RT_F32);
    c.attrs({0.0, 1.0, 1, 128, 1, 128});
    float *x = c.f32(in);
    for (int i = 0; i < 256 * 384; ++i)
      x[i] = 0.25f + float(i % 7);
    x[5 * 384 + 200] = nan ? NAN : -INFINITY;
    int32_t rc;
    std::string error;
    runOnGpu(c, infir2rt_cuda_quantize_dual, rc, error);
    EXPECT_EQ(rc, INFIR2RT_NONFINITE);
    EXPECT_EQ(error, std::string("gpu: non-finite amax (") +
                         (nan ? "nan" : "inf") +
                         ") in scale block 16 of the row-wise copy: refusing "
                         "to quantize it");
    infir2rt_context ctx{};
    std::vector<uint8_t> host = c.host;
    ctx.regions[0] = ctx.regions[1] = host.data();
    EXPECT_EQ(infir2rt_quantize_dual(&ctx, c.desc.data(), "gpu"),
              INFIR2RT_NONFINITE);
    // The CPU's words, which do not name the copy.
    std::string copy = " of the row-wise copy";
    EXPECT_EQ(infir2::rt::callError(ctx),
              error.substr(0, error.find(copy)) +
                  error.substr(error.find(copy) + copy.size()));
    // On a step stream, after an accepted call: the same words, at the
    // stream's wait.
    Call finite = c;
    float *y = finite.f32(in);
    y[5 * 384 + 200] = 1.0f;
    std::string deferred;
    EXPECT_EQ(runOnStepStream({finite, c}, infir2rt_cuda_quantize_dual,
                              {"first", "gpu"}, deferred),
              INFIR2RT_NONFINITE);
    EXPECT_EQ(deferred, error);
  }
}

// On a step stream a refusal waits for the step's read-back (Deferred.h):
// each call returns 0 and queues on; the backend's synchronize then returns
// the status with the CPU backend's message for the earliest refusing call
// (a later call's smaller block does not win), and the next wait finds
// nothing. The three-pass quantizer (a ragged [2, 256]) and the tile
// kernel ([256, 384]) both report through it.
TEST(CudaQuantizeErrors, StepStreamDefersTheRefusalToItsEnd) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  auto call = [](int64_t rows, int64_t cols, int64_t poisonAt, float poison) {
    Call c;
    int in = c.add({rows, cols}, INFIR2RT_F32);
    c.add({rows, cols}, INFIR2RT_E4M3);
    c.add({rows, cols / 128}, INFIR2RT_F32);
    c.attrs({0.0, 1.0, 1, 128});
    float *x = c.f32(in);
    for (int64_t i = 0; i < rows * cols; ++i)
      x[i] = 0.25f + float(i % 5);
    if (poisonAt >= 0)
      x[poisonAt] = poison;
    return c;
  };
  // Finite; NaN in block 3 of a ragged call (three passes); -inf in block 0
  // of a tiled one, later.
  std::vector<Call> calls = {call(256, 384, -1, 0.0f),
                             call(2, 256, 256 + 130, NAN),
                             call(256, 384, 5, -INFINITY)};
  std::string why;
  EXPECT_EQ(runOnStepStream(calls, infir2rt_cuda_quantize,
                            {"first", "second", "third"}, why),
            INFIR2RT_NONFINITE);
  // The CPU backend's words for the second call.
  std::vector<uint8_t> host = calls[1].host;
  infir2rt_context cpu{};
  cpu.regions[0] = cpu.regions[1] = host.data();
  EXPECT_EQ(infir2rt_quantize(&cpu, calls[1].desc.data(), "second"),
            INFIR2RT_NONFINITE);
  EXPECT_EQ(why, infir2::rt::callError(cpu));
}

// RMSNorm and SwiGLU with FP8 output: the fused entry point on the GPU gives
// the bytes of the producer's call followed by quantize_dual's on the GPU
// (every operand, byte for byte: the same device functions compute the
// values, and the amaxes do not depend on the order), and the CPU backend's
// fused entry gives the same high-precision result within the producers'
// tolerance (a few ulps, checked operand by operand in CudaElementwise).
TEST(CudaFused, NormAndSwigluWithFP8OutputMatchTheirTwoCalls) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  const int64_t B = 2, S = 128, K = 384, T = B * S;
  for (bool norm : {true, false}) {
    SCOPED_TRACE(norm ? "rms_norm_quantize_dual" : "swiglu_quantize_dual");
    Call c;
    int a = c.add({B, S, K}, INFIR2RT_BF16);
    int b = norm ? c.add({K}, INFIR2RT_BF16) : c.add({B, S, K}, INFIR2RT_BF16);
    c.add({B, S, K}, INFIR2RT_BF16);
    c.add({B, S, K}, INFIR2RT_E4M3);
    c.add({B, S, K / 128}, INFIR2RT_F32);
    c.add({K, T}, INFIR2RT_E4M3);
    c.add({K, T / 128}, INFIR2RT_F32);
    fill(c, a, INFIR2RT_BF16, T, K, rng);
    fill(c, b, INFIR2RT_BF16, norm ? 1 : T, K, rng);
    std::vector<double> quantize = {0.0, 1.0, 1.0, 1.0, 128.0, 1.0, 128.0};
    std::vector<double> attrs = quantize;
    if (norm)
      attrs.insert(attrs.begin(), 1e-6);
    c.attrs(attrs);
    int64_t producerAttrs = norm ? 1 : 0;

    int32_t rc = 0;
    std::string error;
    std::vector<uint8_t> fused =
        runOnGpu(c,
                 norm ? infir2rt_cuda_rms_norm_quantize_dual
                      : infir2rt_cuda_swiglu_quantize_dual,
                 rc, error);
    ASSERT_EQ(rc, 0) << error;

    Call producer = c;
    producer.desc =
        infir2::rt::subDescriptor(c.desc.data(), {0, 1, 2}, 0, producerAttrs);
    std::vector<uint8_t> mid =
        runOnGpu(producer, norm ? infir2rt_cuda_rms_norm : infir2rt_cuda_swiglu,
                 rc, error);
    ASSERT_EQ(rc, 0) << error;
    Call second = c;
    second.host = mid;
    second.desc = infir2::rt::subDescriptor(c.desc.data(), {2, 3, 4, 5, 6},
                                            producerAttrs, quantize.size());
    std::vector<uint8_t> twoCalls =
        runOnGpu(second, infir2rt_cuda_quantize_dual, rc, error);
    ASSERT_EQ(rc, 0) << error;
    expectSameBytes(c, 2, fused, twoCalls);

    std::vector<uint8_t> onCpu =
        runOnCpu(c, norm ? infir2rt_rms_norm_quantize_dual
                         : infir2rt_swiglu_quantize_dual);
    // BF16 has 8 significant bits: 2 ulps is 2^-7 relative.
    double worst = 0.0;
    for (int64_t i = 0; i < T * K; ++i) {
      auto value = [&](const std::vector<uint8_t> &mem) {
        uint16_t h;
        std::memcpy(&h, mem.data() + c.operands[2].first + 2 * i, 2);
        return double(infir2::rt::bf16ToFloat(h));
      };
      double g = value(fused), w = value(onCpu);
      double size = std::max(std::fabs(g), std::fabs(w));
      if (size > 0)
        worst = std::max(worst, std::fabs(g - w) / size);
    }
    EXPECT_LE(worst, 1.0 / 128) << "relative, GPU against CPU";
  }
}

} // namespace
