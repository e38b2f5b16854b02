//===- CudaElementwiseTest.cpp - GPU element-wise and layout kernels ------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Activations, norms, AdamW, and the layout and reduction kernels on the GPU
// against the CPU backend, within the ulps each test states.
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

TEST(CudaElementwise, MatchTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  struct Case {
    const char *name;
    Entry cpu, gpu;
    int inputs;
    std::vector<int64_t> rhs;
  };
  for (const Case &k :
       {Case{"copy", infir2rt_copy, infir2rt_cuda_copy, 1, {}},
        Case{"add", infir2rt_add, infir2rt_cuda_add, 2, {384}},
        Case{"mul", infir2rt_mul, infir2rt_cuda_mul, 2, {384}},
        Case{"silu", infir2rt_silu, infir2rt_cuda_silu, 1, {}},
        Case{"swiglu", infir2rt_swiglu, infir2rt_cuda_swiglu, 2, {64, 384}}}) {
    SCOPED_TRACE(k.name);
    Call c;
    int a = c.add({64, 384}, INFIR2RT_F32);
    fill(c, a, INFIR2RT_F32, 64, 384, rng);
    if (k.inputs == 2) {
      int b = c.add(k.rhs, INFIR2RT_BF16);
      fill(c, b, INFIR2RT_BF16, k.rhs.size() == 2 ? 64 : 1, 384, rng);
    }
    int out = c.add({64, 384}, INFIR2RT_BF16);
    compareClose(c, out, INFIR2RT_BF16, 64 * 384, 1, k.cpu, k.gpu);
  }
}

TEST(CudaElementwise, RmsNormMatchesTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  Call c;
  int x = c.add({128, 896}, INFIR2RT_BF16), w = c.add({896}, INFIR2RT_BF16);
  int out = c.add({128, 896}, INFIR2RT_F32);
  c.attrs({1e-6});
  fill(c, x, INFIR2RT_BF16, 128, 896, rng);
  fill(c, w, INFIR2RT_BF16, 1, 896, rng);
  // FP32 sums of 896 squares in two orders: a few ulps.
  compareClose(c, out, INFIR2RT_F32, 128 * 896, 64, infir2rt_rms_norm,
               infir2rt_cuda_rms_norm);
}

/// adamw on both backends with moments of type `moments` (FP32, or BF16 as
/// optimizer-state=bf16 stores them).
void adamwMatchesTheCpuBackend(int32_t moments) {
  std::mt19937_64 rng = seededRng();
  Call c;
  int n = 4096;
  int p = c.add({n}, INFIR2RT_F32), g = c.add({n}, INFIR2RT_F32),
      m = c.add({n}, moments), v = c.add({n}, moments);
  int lr = c.add({}, INFIR2RT_F32), step = c.add({}, INFIR2RT_F32),
      gs = c.add({}, INFIR2RT_F32), gn = c.add({}, INFIR2RT_F32);
  int np = c.add({n}, INFIR2RT_F32);
  c.add({n}, moments);
  c.add({n}, moments);
  c.attrs({0.9, 0.95, 1e-8, 0.1, 1.0});
  for (int o : {p, g})
    fill(c, o, INFIR2RT_F32, 1, n, rng);
  fill(c, m, moments, 1, n, rng);
  fill(c, v, moments, 1, n, rng);
  // Second moments are non-negative: clear the sign bits.
  uint8_t *vv = c.host.data() + c.operands[v].first;
  for (int i = 0; i < n; ++i) {
    if (moments == INFIR2RT_BF16)
      reinterpret_cast<uint16_t *>(vv)[i] &= 0x7fff;
    else
      reinterpret_cast<uint32_t *>(vv)[i] &= 0x7fffffffu;
  }
  auto scalar = [&](int o, float x) {
    std::memcpy(c.host.data() + c.operands[o].first, &x, 4);
  };
  scalar(lr, 1e-3f);
  scalar(step, 7.0f);
  scalar(gs, 0.5f);
  scalar(gn, 3.0f);
  // Bit-identical, every result (the masters, both moments): the update is
  // built from operations nvcc may not fuse into FMAs (it fused them before,
  // and 6 of 4096 masters near zero then differed by more than 8 ulps), and
  // BF16 moments are rounded to nearest even on both.
  compareClose(c, np, INFIR2RT_F32, n, 0, infir2rt_adamw, infir2rt_cuda_adamw);
  for (int o : {np + 1, np + 2})
    compareClose(c, o, moments, n, 0, infir2rt_adamw, infir2rt_cuda_adamw);
}

TEST(CudaElementwise, AdamWMatchesTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  adamwMatchesTheCpuBackend(INFIR2RT_F32);
}

TEST(CudaElementwise, AdamWWithBF16MomentsMatchesTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  adamwMatchesTheCpuBackend(INFIR2RT_BF16);
}

// The whole optimizer step's update in one call: three tensors of odd
// sizes, two with BF16 working copies; every result bit-identical to the
// CPU backend's (the adamw rule above, and the same rounding to BF16).
TEST(CudaElementwise, AdamWGroupMatchesTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  const int64_t sizes[] = {1, 4099, 896};
  Call c;
  std::vector<int> in[4];
  for (int k = 0; k < 4; ++k)
    for (int64_t n : sizes) {
      in[k].push_back(c.add({n}, INFIR2RT_F32));
      fill(c, in[k].back(), INFIR2RT_F32, 1, n, rng);
    }
  for (size_t t = 0; t < 3; ++t) { // second moments are non-negative
    float *v = reinterpret_cast<float *>(c.host.data() +
                                         c.operands[in[3][t]].first);
    for (int64_t i = 0; i < sizes[t]; ++i)
      v[i] = std::fabs(v[i]);
  }
  int first = c.add({}, INFIR2RT_F32);
  for (int i = 0; i < 3; ++i)
    c.add({}, INFIR2RT_F32);
  for (auto [i, x] : {std::pair{0, 1e-3f}, {1, 7.0f}, {2, 0.5f}, {3, 3.0f}})
    std::memcpy(c.host.data() + c.operands[first + i].first, &x, 4);
  std::vector<std::pair<int, int64_t>> outs; // (operand, elements), FP32
  for (int k = 0; k < 3; ++k)
    for (int64_t n : sizes)
      outs.push_back({c.add({n}, INFIR2RT_F32), n});
  int w0 = c.add({sizes[0]}, INFIR2RT_BF16), w2 = c.add({sizes[2]}, INFIR2RT_BF16);
  c.attrs({0.9, 0.95, 1e-8, 1.0, 3, 0.1, 0.0, 0.1, 2, 0, 2});
  for (auto [o, n] : outs)
    compareClose(c, o, INFIR2RT_F32, n, 0, infir2rt_adamw_group,
                 infir2rt_cuda_adamw_group);
  compareClose(c, w0, INFIR2RT_BF16, sizes[0], 0, infir2rt_adamw_group,
               infir2rt_cuda_adamw_group);
  compareClose(c, w2, INFIR2RT_BF16, sizes[2], 0, infir2rt_adamw_group,
               infir2rt_cuda_adamw_group);
  // The scalars are read on the device: a step below 1 is refused there,
  // in the CPU backend's words, and nothing is written.
  float zero = 0.0f;
  std::memcpy(c.host.data() + c.operands[first + 1].first, &zero, 4);
  int32_t rc;
  std::string error;
  std::vector<uint8_t> after =
      runOnGpu(c, infir2rt_cuda_adamw_group, rc, error);
  EXPECT_EQ(rc, INFIR2RT_FAILED);
  EXPECT_EQ(error, "gpu: step must be at least 1, got 0");
  EXPECT_TRUE(after == c.host) << "a refused step wrote the state";
}

// Layout and reduction kernels against the CPU backend: fill, transpose and
// embedding exactly; rope (both directions) and the gradients of silu and
// swiglu within a few ulps of the largest output, not of each: they are
// differences (x·cos − y·sin, s + x·s·(1 − s)) that cancel to ~0 for some
// elements, where CUDA's FMA contraction and its expf's last ulp move the
// small result by many of its own ulps; reduce_sum within 16 ulps of its
// largest output and global_norm within 16 ulps (FP64 sums in another
// order, rounded to FP32).
TEST(CudaLayout, MatchTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  {
    SCOPED_TRACE("fill");
    Call c;
    int out = c.add({3, 100}, INFIR2RT_BF16);
    c.attrs({0.3});
    compareClose(c, out, INFIR2RT_BF16, 300, 0, infir2rt_fill,
                 infir2rt_cuda_fill);
  }
  {
    SCOPED_TRACE("transpose");
    Call c;
    int in = c.add({4, 6, 8}, INFIR2RT_F32);
    int out = c.add({8, 4, 6}, INFIR2RT_F32);
    c.attrs({2, 0, 1});
    fill(c, in, INFIR2RT_F32, 24, 8, rng);
    compareClose(c, out, INFIR2RT_F32, 192, 0, infir2rt_transpose,
                 infir2rt_cuda_transpose);
  }
  {
    SCOPED_TRACE("embedding");
    Call c;
    int table = c.add({50, 64}, INFIR2RT_BF16),
        ids = c.add({4, 16}, INFIR2RT_I32);
    int out = c.add({4, 16, 64}, INFIR2RT_BF16);
    c.attrs({1.0}); // vocab_shards
    fill(c, table, INFIR2RT_BF16, 50, 64, rng);
    int32_t *id =
        reinterpret_cast<int32_t *>(c.host.data() + c.operands[ids].first);
    for (int i = 0; i < 64; ++i)
      id[i] = int32_t(rng() % 50);
    compareClose(c, out, INFIR2RT_BF16, 4 * 16 * 64, 0, infir2rt_embedding,
                 infir2rt_cuda_embedding);
    Call valid = c;
    id[37] = 50; // out of range: both refuse, naming the position
    int32_t rc;
    std::string error;
    runOnGpu(c, infir2rt_cuda_embedding, rc, error);
    EXPECT_EQ(rc, INFIR2RT_FAILED);
    EXPECT_EQ(error, "gpu: token id 50 at position 37 is out of range [0, 50)");
    // On a step stream: the same words at the stream's wait (the id and its
    // position from the call's detail word).
    std::string deferred;
    EXPECT_EQ(runOnStepStream({valid, c}, infir2rt_cuda_embedding,
                              {"first", "gpu"}, deferred),
              INFIR2RT_FAILED);
    EXPECT_EQ(deferred, error);
  }
  for (double sign : {1.0, -1.0}) {
    SCOPED_TRACE(sign > 0 ? "rope" : "rope_grad");
    Call c;
    int x = c.add({2, 16, 256}, INFIR2RT_F32), pos = c.add({16}, INFIR2RT_I32);
    int out = c.add({2, 16, 256}, INFIR2RT_F32);
    c.attrs({64, 1e6, sign});
    fill(c, x, INFIR2RT_F32, 32, 256, rng);
    int32_t *p =
        reinterpret_cast<int32_t *>(c.host.data() + c.operands[pos].first);
    for (int i = 0; i < 16; ++i)
      p[i] = i * 97; // positions far from 0: angles that need FP64
    compareClose(c, out, INFIR2RT_F32, 2 * 16 * 256, 4, infir2rt_rope,
                 infir2rt_cuda_rope, /*normwise=*/true);
  }
  {
    SCOPED_TRACE("silu_grad");
    Call c;
    int x = c.add({64, 128}, INFIR2RT_F32), dy = c.add({64, 128}, INFIR2RT_F32);
    int out = c.add({64, 128}, INFIR2RT_F32);
    fill(c, x, INFIR2RT_F32, 64, 128, rng);
    fill(c, dy, INFIR2RT_F32, 64, 128, rng);
    compareClose(c, out, INFIR2RT_F32, 64 * 128, 8, infir2rt_silu_grad,
                 infir2rt_cuda_silu_grad, /*normwise=*/true);
  }
  {
    SCOPED_TRACE("swiglu_grad");
    Call c;
    int g = c.add({64, 128}, INFIR2RT_BF16),
        u = c.add({64, 128}, INFIR2RT_BF16),
        dy = c.add({64, 128}, INFIR2RT_BF16);
    int dg = c.add({64, 128}, INFIR2RT_F32),
        du = c.add({64, 128}, INFIR2RT_F32);
    for (int o : {g, u, dy})
      fill(c, o, INFIR2RT_BF16, 64, 128, rng);
    for (int o : {dg, du})
      compareClose(c, o, INFIR2RT_F32, 64 * 128, 8, infir2rt_swiglu_grad,
                   infir2rt_cuda_swiglu_grad, /*normwise=*/true);
  }
  {
    SCOPED_TRACE("sgd");
    Call c;
    int n = 2048;
    int p = c.add({n}, INFIR2RT_F32), g = c.add({n}, INFIR2RT_F32);
    int lr = c.add({}, INFIR2RT_F32), gs = c.add({}, INFIR2RT_F32),
        gn = c.add({}, INFIR2RT_F32);
    int np = c.add({n}, INFIR2RT_F32);
    c.attrs({0.01, 1.0});
    fill(c, p, INFIR2RT_F32, 1, n, rng);
    fill(c, g, INFIR2RT_F32, 1, n, rng);
    float values[3] = {0.05f, 0.25f, 4.0f}; // lr, 1/K, a norm that clips
    for (int k = 0; k < 3; ++k)
      std::memcpy(c.host.data() + c.operands[lr + k].first, &values[k], 4);
    (void)gs;
    (void)gn;
    // Bit-identical: the rule is built from operations nvcc may not fuse.
    compareClose(c, np, INFIR2RT_F32, n, 0, infir2rt_sgd, infir2rt_cuda_sgd);
  }
  // Without and with an FP32 accumulator (the bias gradient added into its
  // accumulator: ABI version 6), over the one-pass and two-stage sums.
  for (int64_t rows : {8, 512})
    for (bool hasAcc : {false, true}) {
      SCOPED_TRACE(std::string("reduce_sum over ") + std::to_string(rows) +
                   (hasAcc ? " rows, into an accumulator" : " rows"));
      Call c;
      int x = c.add({rows, 96}, INFIR2RT_BF16), out = c.add({96}, INFIR2RT_F32);
      fill(c, x, INFIR2RT_BF16, rows, 96, rng);
      if (hasAcc)
        fill(c, c.add({96}, INFIR2RT_F32), INFIR2RT_F32, 1, 96, rng);
      c.attrs({hasAcc ? 1.0 : 0.0});
      compareClose(c, out, INFIR2RT_F32, 96, 16, infir2rt_reduce_sum,
                   infir2rt_cuda_reduce_sum, /*normwise=*/true);
    }
  // Groups in one call (ABI 9: a layer's q, k and v bias gradients), with
  // accumulators: the one-pass and the two-stage sum in one call, sharing
  // the workspace; each group's result compared.
  {
    SCOPED_TRACE("reduce_sum of two groups");
    Call c;
    int x0 = c.add({512, 96}, INFIR2RT_BF16), out0 = c.add({96}, INFIR2RT_F32),
        a0 = c.add({96}, INFIR2RT_F32), x1 = c.add({8, 32}, INFIR2RT_BF16),
        out1 = c.add({32}, INFIR2RT_F32), a1 = c.add({32}, INFIR2RT_F32);
    fill(c, x0, INFIR2RT_BF16, 512, 96, rng);
    fill(c, a0, INFIR2RT_F32, 1, 96, rng);
    fill(c, x1, INFIR2RT_BF16, 8, 32, rng);
    fill(c, a1, INFIR2RT_F32, 1, 32, rng);
    c.attrs({1.0});
    compareClose(c, out0, INFIR2RT_F32, 96, 16, infir2rt_reduce_sum,
                 infir2rt_cuda_reduce_sum, /*normwise=*/true);
    compareClose(c, out1, INFIR2RT_F32, 32, 16, infir2rt_reduce_sum,
                 infir2rt_cuda_reduce_sum, /*normwise=*/true);
  }
  {
    SCOPED_TRACE("global_norm");
    Call c;
    int g0 = c.add({300, 7}, INFIR2RT_F32), g1 = c.add({1000}, INFIR2RT_F32);
    int scale = c.add({}, INFIR2RT_F32), norm = c.add({}, INFIR2RT_F32);
    fill(c, g0, INFIR2RT_F32, 300, 7, rng);
    fill(c, g1, INFIR2RT_F32, 1, 1000, rng);
    float half = 0.5f;
    std::memcpy(c.host.data() + c.operands[scale].first, &half, 4);
    c.attrs({0.0}); // not across ranks
    compareClose(c, norm, INFIR2RT_F32, 1, 16, infir2rt_global_norm,
                 infir2rt_cuda_global_norm);
  }
}

} // namespace
