//===- LossChunksVsInterpreterTest.cpp - A loss computed in chunks --------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CPU runtime's loss_weight, and cross_entropy and cross_entropy_grad
// with a divisor (--infir2-chunk-loss: each chunk's share of the batch's
// mean), called through the ABI with hand-built descriptors, against the
// reference interpreter (FP64) running the whole batch unchunked: the
// chunks' losses must add up to the batch's loss and their gradients be the
// batch's gradient rows. Targets include ignored ones and the mask
// fractional weights and zeros. Bounds: the weight sum is exact (a sum of a
// few dozen values with 2 fraction bits); the loss 1e-6 relative (the
// kernel's FP64 sum rounded to FP32, plus one FP32 add per chunk); each
// gradient element 1e-6 of the row's largest (FP32 softmax terms, each
// rounded once). The seed is printed.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/ABI.h"

#include "DescriptorBuilder.h"
#include "InterpreterOracle.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

using infir2::interp::Tensor;
using infir2::test::Call;

namespace {

TEST(LossChunksVsInterpreter, ChunksAddUpToTheBatchLossAndGradient) {
  uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);
  constexpr int64_t tokens = 24, vocab = 40, chunk = 8;
  Tensor logits(llvm::SmallVector<int64_t>{tokens, vocab}),
      targets(llvm::SmallVector<int64_t>{tokens}),
      mask(llvm::SmallVector<int64_t>{tokens});
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (double &v : logits.data)
    v = normal(rng);
  for (int64_t t = 0; t < tokens; ++t) {
    targets.data[t] = t % 7 == 2 ? -100 : double(rng() % vocab);
    mask.data[t] = t % 5 == 0 ? 0.0 : 0.25 * double(1 + rng() % 8);
  }
  infir2::test::InterpreterOracle oracle;
  llvm::SmallVector<Tensor> want = oracle.interpret(
      "func.func @f(%l: tensor<24x40xf32>, %t: tensor<24xi32>, %m: "
      "tensor<24xf32>) -> (tensor<f32>, tensor<24x40xf32>, tensor<f32>) {\n"
      "  %one = arith.constant dense<0.75> : tensor<f32>\n"
      "  %loss = infir2.cross_entropy %l, %t mask %m : tensor<24x40xf32>, "
      "tensor<24xi32>, tensor<24xf32> -> tensor<f32>\n"
      "  %g = infir2.cross_entropy_grad %l, %t, %one mask %m : "
      "tensor<24x40xf32>, tensor<24xi32>, tensor<f32>, tensor<24xf32>\n"
      "  %w = infir2.loss_weight %t mask %m : tensor<24xi32>, tensor<24xf32> "
      "-> tensor<f32>\n"
      "  return %loss, %g, %w : tensor<f32>, tensor<24x40xf32>, tensor<f32>\n"
      "}\n",
      {logits, targets, mask});
  ASSERT_EQ(want.size(), 3u);
  double weightSum = 0.0;
  for (int64_t t = 0; t < tokens; ++t)
    weightSum += targets.data[t] == -100 ? 0.0 : mask.data[t];
  ASSERT_EQ(want[2].data[0], weightSum) << "the interpreter's own sum";
  ASSERT_GT(weightSum, 0.0);

  // The batch's weight sum.
  Call w;
  int wt = w.add({tokens}, INFIR2RT_I32), wm = w.add({tokens}, INFIR2RT_F32),
      wo = w.add({}, INFIR2RT_F32);
  w.attrs({-100, 1});
  for (int64_t t = 0; t < tokens; ++t) {
    reinterpret_cast<int32_t *>(w.u8(wt))[t] = int32_t(targets.data[t]);
    w.f32(wm)[t] = float(mask.data[t]);
  }
  ASSERT_EQ(w.run(infir2rt_loss_weight), 0);
  float divisor = *w.f32(wo);
  EXPECT_EQ(double(divisor), weightSum);

  // Each chunk's loss and gradient rows, divided by the batch's weight.
  float loss = 0.0f;
  for (int64_t c0 = 0; c0 < tokens; c0 += chunk) {
    SCOPED_TRACE("chunk at token " + std::to_string(c0));
    for (bool grad : {false, true}) {
      Call c;
      int l = c.add({chunk, vocab}, INFIR2RT_F32),
          t = c.add({chunk}, INFIR2RT_I32), m = c.add({chunk}, INFIR2RT_F32);
      int dl = grad ? c.add({}, INFIR2RT_F32) : -1;
      int d = c.add({}, INFIR2RT_F32);
      int out =
          grad ? c.add({chunk, vocab}, INFIR2RT_F32) : c.add({}, INFIR2RT_F32);
      c.attrs({-100, 1, 1, 1});
      for (int64_t i = 0; i < chunk * vocab; ++i)
        c.f32(l)[i] = float(logits.data[c0 * vocab + i]);
      for (int64_t i = 0; i < chunk; ++i) {
        reinterpret_cast<int32_t *>(c.u8(t))[i] = int32_t(targets.data[c0 + i]);
        c.f32(m)[i] = float(mask.data[c0 + i]);
      }
      if (grad)
        *c.f32(dl) = 0.75f;
      *c.f32(d) = divisor;
      ASSERT_EQ(
          c.run(grad ? infir2rt_cross_entropy_grad : infir2rt_cross_entropy),
          0);
      if (!grad) {
        loss += *c.f32(out);
        continue;
      }
      for (int64_t i = 0; i < chunk; ++i) {
        double largest = 0.0;
        for (int64_t v = 0; v < vocab; ++v)
          largest =
              std::max(largest, std::abs(want[1].data[(c0 + i) * vocab + v]));
        for (int64_t v = 0; v < vocab; ++v)
          ASSERT_NEAR(c.f32(out)[i * vocab + v],
                      want[1].data[(c0 + i) * vocab + v], 1e-6 * largest)
              << "token " << c0 + i << ", id " << v;
      }
    }
  }
  EXPECT_NEAR(loss, want[0].data[0], 1e-6 * std::abs(want[0].data[0]));
}

// Without a mask the divisor replaces the count of counted tokens; a zero
// divisor (no token counts in the batch) gives a zero loss, as the
// unchunked loss does.
TEST(LossChunksVsInterpreter, ZeroDivisorGivesZero) {
  Call c;
  int l = c.add({2, 4}, INFIR2RT_F32), t = c.add({2}, INFIR2RT_I32),
      d = c.add({}, INFIR2RT_F32), out = c.add({}, INFIR2RT_F32);
  c.attrs({-100, 0, 1, 1});
  for (int i = 0; i < 8; ++i)
    c.f32(l)[i] = float(i);
  reinterpret_cast<int32_t *>(c.u8(t))[0] = 1;
  reinterpret_cast<int32_t *>(c.u8(t))[1] = 3;
  *c.f32(d) = 0.0f;
  *c.f32(out) = 5.0f;
  ASSERT_EQ(c.run(infir2rt_cross_entropy), 0);
  EXPECT_EQ(*c.f32(out), 0.0f);
  // With a divisor of 4 (two tokens of another chunk counted too), each
  // token's loss is log(sum(exp(row))) - row[target], summed, over 4.
  *c.f32(d) = 4.0f;
  ASSERT_EQ(c.run(infir2rt_cross_entropy), 0);
  double lse0 = std::log(std::exp(0.0) + std::exp(1.0) + std::exp(2.0) +
                         std::exp(3.0)),
         lse1 = std::log(std::exp(4.0) + std::exp(5.0) + std::exp(6.0) +
                         std::exp(7.0));
  EXPECT_NEAR(*c.f32(out), ((lse0 - 1.0) + (lse1 - 7.0)) / 4.0, 1e-6);
}

} // namespace
