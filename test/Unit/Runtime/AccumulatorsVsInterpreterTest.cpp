//===- AccumulatorsVsInterpreterTest.cpp - Gradients into FP32 accumulators
//===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CPU runtime's reduce_sum, rms_norm_grad and embedding_grad with an
// FP32 accumulator (ABI version 6: a bias's, a norm weight's and an
// embedding table's gradient added into its accumulator by the op that
// makes it), and rms_norm_grad with a residual (ABI 9), called through the ABI
// with hand-built descriptors, against the reference interpreter (FP64) running
// the same ops on the same inputs. Each runs with the result in a buffer of its
// own (poisoned first) and in place (the result and the accumulator one buffer,
// as the planner lays out a training step). The accumulators are N(0, 1) times
// the scale of what is added to them, so a dropped or doubled accumulator is
// off by about that scale. Bounds: 1e-6 of the sum of the magnitudes added
// (FP32 terms and FP32 or FP64 sums, each FP32 rounding 6e-8 relative, over at
// most a few hundred terms whose errors do not all align). Inputs are BF16
// values (what a training step feeds these ops); the seed is printed.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Float.h"

#include "DescriptorBuilder.h"
#include "InterpreterOracle.h"


#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>

using namespace mlir;
using infir2::interp::Tensor;
using infir2::test::Call;

namespace {

using Entry = int32_t (*)(infir2rt_context *, const int64_t *, const char *);

class AccumulatorsVsInterpreter : public ::testing::Test {
protected:
  AccumulatorsVsInterpreter() {
    uint64_t seed = std::random_device{}();
    std::printf("seed %llu\n", (unsigned long long)seed);
    rng.seed(seed);
  }
  SmallVector<Tensor> interpret(const std::string &source,
                                ArrayRef<Tensor> inputs) {
    return oracle.interpret(source, inputs);
  }
  /// N(0, scale) values rounded to BF16.
  Tensor drawBF16(std::vector<int64_t> shape, double scale = 1.0) {
    Tensor t(shape);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (double &v : t.data)
      v = infir2::rt::bf16ToFloat(
          infir2::rt::floatToBF16(float(normal(rng) * scale)));
    return t;
  }
  /// N(0, scale) values rounded to FP32.
  Tensor drawF32(std::vector<int64_t> shape, double scale) {
    Tensor t(shape);
    std::normal_distribution<double> normal;
    for (double &v : t.data)
      v = double(float(normal(rng) * scale));
    return t;
  }
  static void fill(Call &c, int operand, const Tensor &t) {
    for (int64_t i = 0; i < t.getNumElements(); ++i)
      c.f32(operand)[i] = float(t.data[i]);
  }
  static void fillBF16(Call &c, int operand, const Tensor &t) {
    auto *out = reinterpret_cast<uint16_t *>(c.u8(operand));
    for (int64_t i = 0; i < t.getNumElements(); ++i)
      out[i] = infir2::rt::floatToBF16(float(t.data[i]));
  }
  /// Runs `c` with its result `out` poisoned, or (in place) holding the
  /// accumulator `acc` and `acc`'s descriptor addressing it.
  static int32_t runAccumulating(Call c, Entry entry, int out, int acc,
                                 bool inPlace, std::vector<float> &result) {
    int64_t n = c.operands[out].second / 4;
    for (int64_t i = 0; i < n; ++i)
      c.f32(out)[i] = inPlace ? c.f32(acc)[i] : 1e30f;
    if (inPlace)
      c.desc[2 + acc * INFIR2RT_OPERAND_WORDS + 3] =
          c.desc[2 + out * INFIR2RT_OPERAND_WORDS + 3];
    int32_t rc = c.run(entry);
    result.assign(c.f32(out), c.f32(out) + n);
    return rc;
  }
  /// The magnitudes a column sum of `x` into `acc` adds: |acc| plus the
  /// column's |x|.
  static std::vector<double> sumMagnitudes(const Tensor &x, const Tensor &acc) {
    int64_t n = acc.getNumElements();
    std::vector<double> magnitude(n);
    for (int64_t i = 0; i < x.getNumElements(); ++i)
      magnitude[i % n] += std::abs(x.data[i]);
    for (int64_t i = 0; i < n; ++i)
      magnitude[i] += std::abs(acc.data[i]);
    return magnitude;
  }
  /// Every element within 1e-6 of its magnitude bound.
  static void expectClose(const std::vector<float> &got, const Tensor &want,
                          const std::vector<double> &magnitude) {
    ASSERT_EQ(got.size(), want.data.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_LE(std::abs(double(got[i]) - want.data[i]),
                1e-6 * magnitude[i] + 1e-30)
          << "element " << i << ": " << got[i] << " vs " << want.data[i];
  }

  std::mt19937_64 rng;
  infir2::test::InterpreterOracle oracle;
};

TEST_F(AccumulatorsVsInterpreter, ReduceSum) {
  Tensor dy = drawBF16({4, 32, 64}), acc = drawF32({64}, 10.0);
  SmallVector<Tensor> want = interpret(
      "func.func @f(%dy: tensor<4x32x64xbf16>, %acc: tensor<64xf32>) -> "
      "tensor<64xf32> {\n"
      "  %r = infir2.reduce_sum %dy acc(%acc : tensor<64xf32>) : "
      "tensor<4x32x64xbf16> -> tensor<64xf32>\n"
      "  return %r : tensor<64xf32>\n}\n",
      {dy, acc});
  ASSERT_EQ(want.size(), 1u);
  std::vector<double> magnitude = sumMagnitudes(dy, acc);
  Call c;
  int x = c.add({4, 32, 64}, INFIR2RT_BF16), out = c.add({64}, INFIR2RT_F32),
      a = c.add({64}, INFIR2RT_F32);
  c.attrs({1.0});
  fillBF16(c, x, dy);
  fill(c, a, acc);
  for (bool inPlace : {false, true}) {
    SCOPED_TRACE(inPlace ? "in place" : "a result of its own");
    std::vector<float> got;
    ASSERT_EQ(runAccumulating(c, infir2rt_reduce_sum, out, a, inPlace, got), 0);
    expectClose(got, want[0], magnitude);
  }
}

// Groups in one call (ABI 9: a layer's q, k and v bias gradients), of two
// widths: each group's sum as the interpreter's.
TEST_F(AccumulatorsVsInterpreter, ReduceSumGroups) {
  Tensor dy1 = drawBF16({4, 32, 64}), acc1 = drawF32({64}, 10.0),
         dy2 = drawBF16({128, 16}), acc2 = drawF32({16}, 10.0);
  SmallVector<Tensor> want =
      interpret("func.func @f(%a: tensor<4x32x64xbf16>, %x: tensor<64xf32>, "
                "%b: tensor<128x16xbf16>, %y: tensor<16xf32>) -> "
                "(tensor<64xf32>, tensor<16xf32>) {\n"
                "  %r = infir2.reduce_sum %a acc(%x : tensor<64xf32>) : "
                "tensor<4x32x64xbf16> -> tensor<64xf32>\n"
                "  %s = infir2.reduce_sum %b acc(%y : tensor<16xf32>) : "
                "tensor<128x16xbf16> -> tensor<16xf32>\n"
                "  return %r, %s : tensor<64xf32>, tensor<16xf32>\n}\n",
                {dy1, acc1, dy2, acc2});
  ASSERT_EQ(want.size(), 2u);
  std::vector<double> m1 = sumMagnitudes(dy1, acc1),
                      m2 = sumMagnitudes(dy2, acc2);
  Call c;
  int x1 = c.add({4, 32, 64}, INFIR2RT_BF16), out1 = c.add({64}, INFIR2RT_F32),
      a1 = c.add({64}, INFIR2RT_F32), x2 = c.add({128, 16}, INFIR2RT_BF16),
      out2 = c.add({16}, INFIR2RT_F32), a2 = c.add({16}, INFIR2RT_F32);
  c.attrs({1.0});
  fillBF16(c, x1, dy1);
  fill(c, a1, acc1);
  fillBF16(c, x2, dy2);
  fill(c, a2, acc2);
  for (int64_t i = 0; i < 64; ++i)
    c.f32(out1)[i] = 1e30f;
  for (int64_t i = 0; i < 16; ++i)
    c.f32(out2)[i] = 1e30f;
  ASSERT_EQ(c.run(infir2rt_reduce_sum), 0);
  expectClose(std::vector<float>(c.f32(out1), c.f32(out1) + 64), want[0], m1);
  expectClose(std::vector<float>(c.f32(out2), c.f32(out2) + 16), want[1], m2);
}

TEST_F(AccumulatorsVsInterpreter, RMSNormWeightGradient) {
  Tensor x = drawBF16({4, 32, 64}), w = drawBF16({64}),
         dy = drawBF16({4, 32, 64}), acc = drawF32({64}, 10.0);
  SmallVector<Tensor> want = interpret(
      "func.func @f(%x: tensor<4x32x64xbf16>, %w: tensor<64xbf16>, "
      "%dy: tensor<4x32x64xbf16>, %acc: tensor<64xf32>) -> "
      "(tensor<4x32x64xbf16>, tensor<64xf32>) {\n"
      "  %dx, %dw = infir2.rms_norm_grad %x, %w, %dy acc(%acc : "
      "tensor<64xf32>) {epsilon = 1.0e-06 : f64} : tensor<4x32x64xbf16>, "
      "tensor<64xbf16>\n"
      "  return %dx, %dw : tensor<4x32x64xbf16>, tensor<64xf32>\n}\n",
      {x, w, dy, acc});
  ASSERT_EQ(want.size(), 2u);
  // |dy · x · r| summed over the rows, r = 1 / rms(x's row).
  std::vector<double> magnitude(64);
  for (int64_t r = 0; r < 128; ++r) {
    double ss = 0.0;
    for (int64_t i = 0; i < 64; ++i)
      ss += x.data[r * 64 + i] * x.data[r * 64 + i];
    double inv = 1.0 / std::sqrt(ss / 64 + 1e-6);
    for (int64_t i = 0; i < 64; ++i)
      magnitude[i] += std::abs(dy.data[r * 64 + i] * x.data[r * 64 + i] * inv);
  }
  for (int64_t i = 0; i < 64; ++i)
    magnitude[i] += std::abs(acc.data[i]);
  Call c;
  int in = c.add({4, 32, 64}, INFIR2RT_BF16),
      weight = c.add({64}, INFIR2RT_BF16),
      grad = c.add({4, 32, 64}, INFIR2RT_BF16),
      dx = c.add({4, 32, 64}, INFIR2RT_BF16), dw = c.add({64}, INFIR2RT_F32),
      a = c.add({64}, INFIR2RT_F32);
  c.attrs({1e-6, 1.0, 0.0});
  fillBF16(c, in, x);
  fillBF16(c, weight, w);
  fillBF16(c, grad, dy);
  fill(c, a, acc);
  (void)dx;
  for (bool inPlace : {false, true}) {
    SCOPED_TRACE(inPlace ? "in place" : "a result of its own");
    std::vector<float> got;
    ASSERT_EQ(runAccumulating(c, infir2rt_rms_norm_grad, dw, a, inPlace, got),
              0);
    expectClose(got, want[1], magnitude);
  }
}

// The residual stream's gradient added into the norm's input gradient
// (ABI 9), in a result of its own and in place, BF16 and FP32. The
// residuals are N(0, 4), so a dropped one is off by about 4; the bound is
// the result's one rounding (2^-8 of its magnitude in BF16, 2^-24 in FP32)
// plus the FP32 arithmetic's 1e-5 of the magnitudes of the terms (sums of
// 64 products).
TEST_F(AccumulatorsVsInterpreter, RMSNormInputGradientWithResidual) {
  Tensor x = drawBF16({4, 32, 64}), w = drawBF16({64}),
         dy = drawBF16({4, 32, 64}), res = drawBF16({4, 32, 64}, 4.0);
  SmallVector<Tensor> want =
      interpret("func.func @f(%x: tensor<4x32x64xbf16>, %w: tensor<64xbf16>, "
                "%dy: tensor<4x32x64xbf16>, %g: tensor<4x32x64xbf16>) -> "
                "tensor<4x32x64xbf16> {\n"
                "  %dx, %dw = infir2.rms_norm_grad %x, %w, %dy residual(%g : "
                "tensor<4x32x64xbf16>) {epsilon = 1.0e-06 : f64} : "
                "tensor<4x32x64xbf16>, tensor<64xbf16>\n"
                "  return %dx : tensor<4x32x64xbf16>\n}\n",
                {x, w, dy, res});
  ASSERT_EQ(want.size(), 1u);
  std::vector<double> terms(x.getNumElements());
  for (int64_t r = 0; r < 128; ++r) {
    double ss = 0.0, dot = 0.0;
    for (int64_t i = 0; i < 64; ++i) {
      ss += x.data[r * 64 + i] * x.data[r * 64 + i];
      dot += std::abs(w.data[i] * dy.data[r * 64 + i] * x.data[r * 64 + i]);
    }
    double inv = 1.0 / std::sqrt(ss / 64 + 1e-6);
    for (int64_t i = 0; i < 64; ++i)
      terms[r * 64 + i] =
          std::abs(inv * w.data[i] * dy.data[r * 64 + i]) +
          inv * inv * inv / 64 * std::abs(x.data[r * 64 + i]) * dot;
  }
  // BF16 (the models' gradients; the CPU reads the residual into a copy)
  // and FP32 (read and written in the same memory when in place).
  for (int64_t type : {INFIR2RT_BF16, INFIR2RT_F32}) {
    bool f32 = type == INFIR2RT_F32;
    Call c;
    int in = c.add({4, 32, 64}, INFIR2RT_BF16),
        weight = c.add({64}, INFIR2RT_BF16),
        grad = c.add({4, 32, 64}, INFIR2RT_BF16), dx = c.add({4, 32, 64}, type);
    c.add({64}, INFIR2RT_BF16); // the weight's gradient
    int g = c.add({4, 32, 64}, type);
    c.attrs({1e-6, 0.0, 1.0});
    fillBF16(c, in, x);
    fillBF16(c, weight, w);
    fillBF16(c, grad, dy);
    auto put = [&](Call &call, int operand, const Tensor &t) {
      f32 ? fill(call, operand, t) : fillBF16(call, operand, t);
    };
    put(c, g, res);
    for (bool inPlace : {false, true}) {
      SCOPED_TRACE(std::string(f32 ? "f32, " : "bf16, ") +
                   (inPlace ? "in place" : "a result of its own"));
      Call run = c;
      if (inPlace) // the residual's descriptor addresses dx's buffer
        run.desc[2 + g * INFIR2RT_OPERAND_WORDS + 3] =
            run.desc[2 + dx * INFIR2RT_OPERAND_WORDS + 3];
      put(run, dx, inPlace ? res : Tensor({4, 32, 64}, 1e30));
      ASSERT_EQ(run.run(infir2rt_rms_norm_grad), 0);
      const auto *out = reinterpret_cast<const uint16_t *>(run.u8(dx));
      for (int64_t i = 0; i < x.getNumElements(); ++i) {
        double got =
            f32 ? double(run.f32(dx)[i]) : infir2::rt::bf16ToFloat(out[i]);
        ASSERT_LE(std::abs(got - want[0].data[i]),
                  std::ldexp(std::abs(want[0].data[i]), f32 ? -24 : -8) +
                      1e-5 * terms[i])
            << "element " << i;
      }
    }
  }
}

TEST_F(AccumulatorsVsInterpreter, EmbeddingGradient) {
  // 128 tokens over 100 rows: some rows looked up several times, some not
  // at all (those keep the accumulator's values, exactly).
  constexpr int64_t vocab = 100, dim = 64;
  Tensor ids(SmallVector<int64_t>{4, 32});
  std::uniform_int_distribution<int> id(0, vocab - 1);
  for (double &v : ids.data)
    v = id(rng);
  Tensor dy = drawBF16({4, 32, dim}), acc = drawF32({vocab, dim}, 3.0);
  SmallVector<Tensor> want = interpret(
      "func.func @f(%ids: tensor<4x32xi32>, %dy: tensor<4x32x64xbf16>, "
      "%acc: tensor<100x64xf32>) -> tensor<100x64xf32> {\n"
      "  %g = infir2.embedding_grad %ids, %dy acc(%acc : tensor<100x64xf32>) "
      ": tensor<4x32xi32>, tensor<4x32x64xbf16> -> tensor<100x64xf32>\n"
      "  return %g : tensor<100x64xf32>\n}\n",
      {ids, dy, acc});
  ASSERT_EQ(want.size(), 1u);
  std::vector<double> magnitude(vocab * dim);
  for (int64_t i = 0; i < vocab * dim; ++i)
    magnitude[i] = std::abs(acc.data[i]);
  for (int64_t t = 0; t < 128; ++t)
    for (int64_t i = 0; i < dim; ++i)
      magnitude[int64_t(ids.data[t]) * dim + i] +=
          std::abs(dy.data[t * dim + i]);
  Call c;
  int tokens = c.add({4, 32}, INFIR2RT_I32),
      grad = c.add({4, 32, dim}, INFIR2RT_BF16),
      out = c.add({vocab, dim}, INFIR2RT_F32),
      a = c.add({vocab, dim}, INFIR2RT_F32);
  c.attrs({1.0, 1.0}); // has_acc, vocab_shards
  for (int64_t t = 0; t < 128; ++t)
    reinterpret_cast<int32_t *>(c.u8(tokens))[t] = int32_t(ids.data[t]);
  fillBF16(c, grad, dy);
  fill(c, a, acc);
  for (bool inPlace : {false, true}) {
    SCOPED_TRACE(inPlace ? "in place" : "a result of its own");
    std::vector<float> got;
    ASSERT_EQ(runAccumulating(c, infir2rt_embedding_grad, out, a, inPlace, got),
              0);
    expectClose(got, want[0], magnitude);
  }
}

// An accumulator of another type or size than the result is refused with
// a message, before anything is written.
TEST_F(AccumulatorsVsInterpreter, RefusesAMismatchedAccumulator) {
  for (int64_t type : {INFIR2RT_BF16, INFIR2RT_F32}) {
    Call c;
    int x = c.add({4, 8}, INFIR2RT_F32), out = c.add({8}, INFIR2RT_F32);
    c.add({type == INFIR2RT_F32 ? 4 : 8}, type);
    c.attrs({1.0});
    for (int64_t i = 0; i < 32; ++i)
      c.f32(x)[i] = 1.0f;
    c.f32(out)[0] = 7.0f;
    infir2rt_context ctx{};
    ctx.regions[0] = ctx.regions[1] = c.host.data();
    EXPECT_NE(infir2rt_reduce_sum(&ctx, c.desc.data(), "sum"), 0);
    EXPECT_EQ(std::string(ctx.error_message),
              "a gradient accumulates into an f32 result of the "
              "accumulator's type and size");
    EXPECT_EQ(c.f32(out)[0], 7.0f) << "nothing written";
  }
}

} // namespace
