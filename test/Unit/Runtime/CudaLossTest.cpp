//===- CudaLossTest.cpp - GPU loss kernels --------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Cross-entropy and the gradients that reduce across tokens on the GPU
// against the CPU backend, within the ulps each test states (attention:
// CudaAttentionTest.cpp).
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

// The loss and the gradients that reduce across tokens, against the CPU
// backend: sums in other orders (block reductions, atomics), so within a few
// ulps of each value (the loss, dx, the logits' gradient) or of the largest
// (dw and the embedding gradient, sums that may cancel).
TEST(CudaLoss, MatchTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  const int64_t T = 64, V = 300;
  auto targetsOf = [&](Call &c, int operand) {
    int32_t *t =
        reinterpret_cast<int32_t *>(c.host.data() + c.operands[operand].first);
    for (int i = 0; i < T; ++i)
      t[i] = i % 9 == 0 ? -100 : int32_t(rng() % V); // some ignored
  };
  {
    SCOPED_TRACE("cross_entropy");
    Call c;
    int logits = c.add({T, V}, INFIR2RT_F32), t = c.add({T}, INFIR2RT_I32),
        mask = c.add({T}, INFIR2RT_F32), out = c.add({}, INFIR2RT_F32);
    c.attrs({-100, 1, 0, 1});
    fill(c, logits, INFIR2RT_F32, T, V, rng);
    targetsOf(c, t);
    float *m =
        reinterpret_cast<float *>(c.host.data() + c.operands[mask].first);
    for (int i = 0; i < T; ++i)
      m[i] = i % 4 == 0 ? 0.0f : 1.0f;
    compareClose(c, out, INFIR2RT_F32, 1, 64, infir2rt_cross_entropy,
                 infir2rt_cuda_cross_entropy);
  }
  {
    SCOPED_TRACE("cross_entropy_grad");
    Call c;
    int logits = c.add({T, V}, INFIR2RT_BF16), t = c.add({T}, INFIR2RT_I32),
        dloss = c.add({}, INFIR2RT_F32), out = c.add({T, V}, INFIR2RT_F32);
    c.attrs({-100, 0, 0, 1});
    fill(c, logits, INFIR2RT_BF16, T, V, rng);
    targetsOf(c, t);
    float one = 1.0f;
    std::memcpy(c.host.data() + c.operands[dloss].first, &one, 4);
    compareClose(c, out, INFIR2RT_F32, T * V, 64, infir2rt_cross_entropy_grad,
                 infir2rt_cuda_cross_entropy_grad, /*normwise=*/true);
  }
  // A loss in chunks (--infir2-chunk-loss): the batch's weight sum, and a
  // chunk's loss and gradient divided by it instead of their own weights.
  {
    SCOPED_TRACE("loss_weight");
    Call c;
    int t = c.add({T}, INFIR2RT_I32), mask = c.add({T}, INFIR2RT_F32),
        out = c.add({}, INFIR2RT_F32);
    c.attrs({-100, 1});
    targetsOf(c, t);
    for (int i = 0; i < T; ++i)
      c.f32(mask)[i] = 0.25f * float(i % 5);
    compareClose(c, out, INFIR2RT_F32, 1, 0, infir2rt_loss_weight,
                 infir2rt_cuda_loss_weight);
  }
  for (bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "cross_entropy_grad with a divisor"
                      : "cross_entropy with a divisor");
    Call c;
    int logits = c.add({T, V}, INFIR2RT_F32), t = c.add({T}, INFIR2RT_I32);
    int dloss = grad ? c.add({}, INFIR2RT_F32) : -1;
    int divisor = c.add({}, INFIR2RT_F32);
    int out = grad ? c.add({T, V}, INFIR2RT_BF16) : c.add({}, INFIR2RT_F32);
    c.attrs({-100, 0, 1, 1});
    fill(c, logits, INFIR2RT_F32, T, V, rng);
    targetsOf(c, t);
    if (grad)
      *c.f32(dloss) = 1.0f;
    *c.f32(divisor) = 3.0f * float(T); // other chunks' tokens count too
    if (grad)
      compareClose(c, out, INFIR2RT_BF16, T * V, 1, infir2rt_cross_entropy_grad,
                   infir2rt_cuda_cross_entropy_grad, /*normwise=*/true);
    else
      compareClose(c, out, INFIR2RT_F32, 1, 64, infir2rt_cross_entropy,
                   infir2rt_cuda_cross_entropy);
  }
  // The norm weight's gradient without and with an FP32 accumulator, then
  // with a residual added into the input's gradient, with and without the
  // accumulator (the residual is operand 6 or 5).
  for (int variant : {0, 1, 2, 3}) {
    bool hasAcc = variant == 1 || variant == 2, hasResidual = variant >= 2;
    SCOPED_TRACE(hasResidual ? "rms_norm_grad with a residual"
                 : hasAcc    ? "rms_norm_grad into an accumulator"
                             : "rms_norm_grad");
    Call c;
    int x = c.add({T, 256}, INFIR2RT_BF16), w = c.add({256}, INFIR2RT_BF16),
        dy = c.add({T, 256}, INFIR2RT_BF16);
    int dx = c.add({T, 256}, INFIR2RT_F32), dw = c.add({256}, INFIR2RT_F32);
    if (hasAcc)
      fill(c, c.add({256}, INFIR2RT_F32), INFIR2RT_F32, 1, 256, rng);
    if (hasResidual)
      fill(c, c.add({T, 256}, INFIR2RT_F32), INFIR2RT_F32, T, 256, rng);
    c.attrs({1e-6, hasAcc ? 1.0 : 0.0, hasResidual ? 1.0 : 0.0});
    fill(c, x, INFIR2RT_BF16, T, 256, rng);
    fill(c, w, INFIR2RT_BF16, 1, 256, rng);
    fill(c, dy, INFIR2RT_BF16, T, 256, rng);
    compareClose(c, dx, INFIR2RT_F32, T * 256, 256, infir2rt_rms_norm_grad,
                 infir2rt_cuda_rms_norm_grad, /*normwise=*/true);
    compareClose(c, dw, INFIR2RT_F32, 256, 256, infir2rt_rms_norm_grad,
                 infir2rt_cuda_rms_norm_grad, /*normwise=*/true);
  }
  // FP32 sums in another order (atomics): within 16 FP32 ulps of the
  // largest row element; a BF16 result is each FP32 sum rounded once, so
  // within 1 BF16 ulp of the largest. The models' embedding gradient adds
  // into its FP32 accumulator (the third case; the rows no token looks up
  // keep the accumulator's values).
  for (int variant : {0, 1, 2}) {
    int64_t type = variant == 1 ? INFIR2RT_BF16 : INFIR2RT_F32;
    SCOPED_TRACE(variant == 0   ? "embedding_grad f32"
                 : variant == 1 ? "embedding_grad bf16"
                                : "embedding_grad into an accumulator");
    Call c;
    int ids = c.add({T}, INFIR2RT_I32),
        dy = c.add({T, 32}, variant == 2 ? INFIR2RT_BF16 : type),
        out = c.add({40, 32}, type);
    if (variant == 2)
      fill(c, c.add({40, 32}, INFIR2RT_F32), INFIR2RT_F32, 40, 32, rng);
    c.attrs({variant == 2 ? 1.0 : 0.0, 1.0});
    int32_t *id =
        reinterpret_cast<int32_t *>(c.host.data() + c.operands[ids].first);
    for (int i = 0; i < T; ++i)
      id[i] = int32_t(rng() % 40); // repeated ids: accumulated rows
    fill(c, dy, variant == 2 ? INFIR2RT_BF16 : type, T, 32, rng);
    compareClose(c, out, type, 40 * 32, type == INFIR2RT_F32 ? 16 : 1,
                 infir2rt_embedding_grad, infir2rt_cuda_embedding_grad,
                 /*normwise=*/true);
  }
}

// Both losses at a vocabulary that is a multiple of 4 (rows of FP32 logits
// read 16 bytes at a time, as at Qwen2.5's 151,936) and a d(loss) other
// than 1, against the CPU backend: sums in another order, so within 64
// ulps of each value as above.
TEST(CudaLoss, WideRowsMatchTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  const int64_t T = 48, V = 4100;
  auto targetsOf = [&](Call &c, int operand) {
    int32_t *t = reinterpret_cast<int32_t *>(c.u8(operand));
    for (int i = 0; i < T; ++i)
      t[i] = i % 7 == 0 ? -100 : int32_t(rng() % V);
  };
  {
    SCOPED_TRACE("cross_entropy");
    Call c;
    int logits = c.add({T, V}, INFIR2RT_F32), t = c.add({T}, INFIR2RT_I32),
        out = c.add({}, INFIR2RT_F32);
    c.attrs({-100, 0, 0, 1});
    fill(c, logits, INFIR2RT_F32, T, V, rng);
    targetsOf(c, t);
    compareClose(c, out, INFIR2RT_F32, 1, 64, infir2rt_cross_entropy,
                 infir2rt_cuda_cross_entropy);
  }
  // The gradient in FP32, and in BF16 as the LM head's is made
  // (--infir2-fold-conversions; written in BF16 pairs), on the same inputs:
  // FP32 values within 64 ulps of the CPU's, so each BF16 one within 1 BF16
  // ulp of the largest; and on the GPU each BF16 value is its FP32 one
  // rounded, bit for bit.
  auto gradCall = [&](int64_t type) {
    Call c;
    c.add({T, V}, INFIR2RT_F32);
    c.add({T}, INFIR2RT_I32);
    c.add({}, INFIR2RT_F32);
    c.add({T, V}, type);
    c.attrs({-100, 0, 0, 1});
    return c;
  };
  Call wide = gradCall(INFIR2RT_F32), narrow = gradCall(INFIR2RT_BF16);
  fill(wide, 0, INFIR2RT_F32, T, V, rng);
  targetsOf(wide, 1);
  float g = 0.37f;
  std::memcpy(wide.u8(2), &g, 4);
  for (int i = 0; i < 3; ++i)
    std::memcpy(narrow.u8(i), wide.u8(i), size_t(wide.operands[i].second));
  std::vector<std::vector<uint8_t>> gpu;
  for (Call *c : {&wide, &narrow}) {
    int64_t type = c == &wide ? INFIR2RT_F32 : INFIR2RT_BF16;
    SCOPED_TRACE(type == INFIR2RT_F32 ? "cross_entropy_grad"
                                      : "cross_entropy_grad into bf16");
    compareClose(*c, 3, type, T * V, type == INFIR2RT_F32 ? 64 : 1,
                 infir2rt_cross_entropy_grad, infir2rt_cuda_cross_entropy_grad,
                 /*normwise=*/true);
    int32_t rc;
    std::string error;
    gpu.push_back(runOnGpu(*c, infir2rt_cuda_cross_entropy_grad, rc, error));
    ASSERT_EQ(rc, 0) << error;
  }
  int64_t differ = 0;
  for (int64_t i = 0; i < T * V; ++i) {
    float f;
    uint16_t b;
    std::memcpy(&f, gpu[0].data() + wide.operands[3].first + 4 * i, 4);
    std::memcpy(&b, gpu[1].data() + narrow.operands[3].first + 2 * i, 2);
    differ += b != infir2::rt::floatToBF16(f);
  }
  EXPECT_EQ(differ, 0) << "BF16 values that are not the FP32 ones rounded";
}

// A target outside the vocabulary: refused with the CPU backend's status
// and words, at once without a step stream and at the stream's next wait
// with one (the earliest refusing call wins: the second of three here,
// though the third's position is smaller); a token id outside the
// embedding gradient's rows likewise.
TEST(CudaLoss, TargetOutOfRangeIsRefusedAsOnTheCpu) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  auto call = [](int badAt, int32_t bad) {
    Call c;
    int logits = c.add({16, 64}, INFIR2RT_F32), t = c.add({16}, INFIR2RT_I32);
    c.add({}, INFIR2RT_F32);
    c.attrs({-100, 0, 0, 1});
    float *x = c.f32(logits);
    for (int i = 0; i < 16 * 64; ++i)
      x[i] = 0.01f * float(i % 13);
    int32_t *ids = reinterpret_cast<int32_t *>(c.u8(t));
    for (int i = 0; i < 16; ++i)
      ids[i] = i % 5 == 0 ? -100 : i;
    if (badAt >= 0)
      ids[badAt] = bad;
    return c;
  };
  auto cpuError = [](const Call &c, const char *where) {
    std::vector<uint8_t> host = c.host;
    infir2rt_context cpu{};
    cpu.regions[0] = cpu.regions[1] = host.data();
    EXPECT_EQ(infir2rt_cross_entropy(&cpu, c.desc.data(), where),
              INFIR2RT_FAILED);
    return infir2::rt::callError(cpu);
  };
  {
    SCOPED_TRACE("no step stream");
    Call c = call(7, 64);
    int32_t rc;
    std::string error;
    runOnGpu(c, infir2rt_cuda_cross_entropy, rc, error);
    EXPECT_EQ(rc, INFIR2RT_FAILED);
    EXPECT_EQ(error, cpuError(c, "gpu"));
  }
  {
    SCOPED_TRACE("embedding_grad, no step stream");
    Call c;
    int ids = c.add({8}, INFIR2RT_I32), dy = c.add({8, 16}, INFIR2RT_F32);
    c.add({10, 16}, INFIR2RT_F32);
    c.attrs({0.0, 1.0});
    int32_t *id = reinterpret_cast<int32_t *>(c.u8(ids));
    for (int i = 0; i < 8; ++i)
      id[i] = i == 5 ? 10 : i;
    float *d = c.f32(dy);
    for (int i = 0; i < 8 * 16; ++i)
      d[i] = 0.5f;
    int32_t rc;
    std::string error;
    runOnGpu(c, infir2rt_cuda_embedding_grad, rc, error);
    EXPECT_EQ(rc, INFIR2RT_FAILED);
    std::vector<uint8_t> host = c.host;
    infir2rt_context cpu{};
    cpu.regions[0] = cpu.regions[1] = host.data();
    EXPECT_EQ(infir2rt_embedding_grad(&cpu, c.desc.data(), "gpu"),
              INFIR2RT_FAILED);
    EXPECT_EQ(error, infir2::rt::callError(cpu));
  }
  SCOPED_TRACE("a step stream");
  std::vector<Call> calls = {call(-1, 0), call(9, -3), call(3, 1000)};
  std::string why;
  EXPECT_EQ(runOnStepStream(calls, infir2rt_cuda_cross_entropy,
                            {"first", "second", "third"}, why),
            INFIR2RT_FAILED);
  EXPECT_EQ(why, cpuError(calls[1], "second"));

  // A refusal that fails the step wins over an earlier one that skips it (a
  // NaN to quantize): the CPU backend goes on past a skipped micro-batch
  // and would stop on the bad target.
  SCOPED_TRACE("a failure after a skip");
  Call nan;
  int x = nan.add({2, 256}, INFIR2RT_F32);
  nan.add({2, 256}, INFIR2RT_E4M3);
  nan.add({2, 2}, INFIR2RT_F32);
  nan.attrs({0.0, 1.0, 1, 128});
  for (int i = 0; i < 512; ++i)
    nan.f32(x)[i] = i == 300 ? NAN : 0.5f;
  EXPECT_EQ(
      runOnStepStream({calls[0], nan, calls[2]},
                      {infir2rt_cuda_cross_entropy, infir2rt_cuda_quantize,
                       infir2rt_cuda_cross_entropy},
                      {"first", "second", "third"}, why),
      INFIR2RT_FAILED);
  EXPECT_EQ(why, cpuError(calls[2], "third"));
}

} // namespace
