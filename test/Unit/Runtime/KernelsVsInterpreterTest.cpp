//===- KernelsVsInterpreterTest.cpp - CPU FP8 kernels against the oracle --===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CPU runtime's quantize / quantize_dual / scaled_matmul entry points,
// called through the ABI with hand-built descriptors, against the reference
// interpreter running the same fp8 ops on the same inputs. The two are
// independent implementations (bit manipulation in runtime/FP8.h; APFloat
// in the interpreter). Quantized data and scales must be identical, value
// for value; the GEMM, FP32 accumulation against FP64 of identical FP8
// operands, must agree to 1e-5 relative to each output row's RMS (K = 512
// terms of FP32 rounding error, about sqrt(K)·6e-8 ≈ 1.4e-6, plus one FP32
// rounding per dequantized operand under fp32 scales; margin ~7x).
// Inputs are N(0, 1) scaled per row by 10^U(-3, 3), so blocks span many
// scales; the seed is printed.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Error.h"
#include "infir2/runtime/FP8.h"
#include "infir2/runtime/Float.h"

#include "DescriptorBuilder.h"
#include "InterpreterOracle.h"


#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace mlir;
using infir2::interp::Tensor;

namespace {

using infir2::test::Call;
using infir2::test::worstRowError;

class KernelsVsInterpreter : public ::testing::TestWithParam<bool> {
protected:
    SmallVector<Tensor> interpret(const std::string &source,
                                ArrayRef<Tensor> inputs) {
    return oracle.interpret(source, inputs);
  }
  /// Rows of N(0,1) scaled by 10^U(-3,3), rounded to FP32.
  Tensor draw(std::vector<int64_t> shape, std::mt19937_64 &rng) {
    Tensor t(shape);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> exponent(-3.0f, 3.0f);
    int64_t cols = shape.back();
    float rowScale = 1.0f;
    for (int64_t i = 0; i < t.getNumElements(); ++i) {
      if (i % cols == 0)
        rowScale = std::pow(10.0f, exponent(rng));
      t.data[i] = double(normal(rng) * rowScale);
    }
    return t;
  }
  infir2::test::InterpreterOracle oracle;
};

uint64_t seedFor(const char *test) {
  uint64_t seed = std::random_device{}();
  std::printf("%s: seed %llu\n", test, (unsigned long long)seed);
  return seed;
}

TEST_P(KernelsVsInterpreter, QuantizeDualIsIdentical) {
  bool e5m2 = GetParam();
  std::mt19937_64 rng(seedFor("QuantizeDualIsIdentical"));
  // A [2, 128, 256] activation: 1x128 row groups, and the [256, 256]
  // column-wise copy in 1x128 groups along tokens; pow2 scales.
  const char *fmt = e5m2 ? "e5m2" : "e4m3";
  const char *elt = e5m2 ? "f8E5M2" : "f8E4M3FN";
  std::string src =
      std::string("func.func @f(%x: tensor<2x128x256xf32>) -> "
                  "(tensor<2x128x256x") +
      elt + ">, tensor<2x128x2xf32>, tensor<256x256x" + elt +
      ">, tensor<256x2xf32>) {\n  %q, %s, %qt, %st = fp8.quantize_dual %x "
      "to " +
      fmt +
      " by #fp8.groups<128, dim = 2> and transposed by #fp8.groups<128, dim "
      "= 1> scale pow2 : tensor<2x128x256xf32> -> tensor<2x128x256x" +
      elt + ">, tensor<2x128x2xf32>, tensor<256x256x" + elt +
      ">, tensor<256x2xf32>\n  return %q, %s, %qt, %st : tensor<2x128x256x" +
      elt + ">, tensor<2x128x2xf32>, tensor<256x256x" + elt +
      ">, tensor<256x2xf32>\n}\n";
  Tensor x = draw({2, 128, 256}, rng);
  SmallVector<Tensor> expected = interpret(src, {x});
  ASSERT_EQ(expected.size(), 4u);

  Call c;
  int in = c.add({2, 128, 256}, INFIR2RT_F32);
  int64_t dt = e5m2 ? INFIR2RT_E5M2 : INFIR2RT_E4M3;
  int q = c.add({2, 128, 256}, dt), s = c.add({2, 128, 2}, INFIR2RT_F32);
  int qt = c.add({256, 256}, dt), st = c.add({256, 2}, INFIR2RT_F32);
  c.attrs({e5m2 ? 1.0 : 0.0, 1.0, 1, 1, 128, 1, 128});
  for (int64_t i = 0; i < x.getNumElements(); ++i)
    c.f32(in)[i] = float(x.data[i]);
  ASSERT_EQ(c.run(infir2rt_quantize_dual), 0);

  auto fmtEnum =
      e5m2 ? infir2::rt::FP8Format::E5M2 : infir2::rt::FP8Format::E4M3;
  int64_t mismatches = 0;
  for (auto [out, scale, idx] :
       {std::tuple<int, int, int>{q, s, 0}, {qt, st, 2}}) {
    const Tensor &data = expected[idx], &scales = expected[idx + 1];
    for (int64_t i = 0; i < data.getNumElements(); ++i)
      mismatches +=
          double(infir2::rt::fp8ToFloat(c.u8(out)[i], fmtEnum)) != data.data[i];
    for (int64_t i = 0; i < scales.getNumElements(); ++i)
      mismatches += double(c.f32(scale)[i]) != scales.data[i];
  }
  EXPECT_EQ(mismatches, 0);
}

// quantize_dual's transposed layouts, byte for byte: 128x128 blocks of a
// matrix (the codes and scales transposed), 1x128 groups along the tokens
// (encoded by rows, written transposed), and one that neither covers (the
// FP32 transpose, quantized); under both scale rules.
TEST_P(KernelsVsInterpreter, DualLayoutsAreIdentical) {
  bool e5m2 = GetParam();
  const char *fmt = e5m2 ? "e5m2" : "e4m3",
             *elt = e5m2 ? "f8E5M2" : "f8E4M3FN";
  auto fmtEnum =
      e5m2 ? infir2::rt::FP8Format::E5M2 : infir2::rt::FP8Format::E4M3;
  int64_t dt = e5m2 ? INFIR2RT_E5M2 : INFIR2RT_E4M3;
  std::mt19937_64 rng(seedFor("DualLayoutsAreIdentical"));
  struct Case {
    std::vector<int64_t> x, scale, dataT, scaleT;
    const char *gran, *granT;
    std::vector<double> blocks; // block, then the transpose's block
  };
  auto type = [](const std::vector<int64_t> &shape, const char *elt) {
    std::string t = "tensor<";
    for (int64_t d : shape)
      t += std::to_string(d) + "x";
    return t + elt + ">";
  };
  for (const Case &k :
       {Case{{256, 384}, {2, 3}, {384, 256}, {3, 2}, "#fp8.blocks<128, 128>",
             "#fp8.blocks<128, 128>", {128, 128, 128, 128}},
        Case{{384, 256}, {384, 2}, {256, 384}, {256, 3},
             "#fp8.groups<128, dim = 1>", "#fp8.groups<128, dim = 1>",
             {1, 128, 1, 128}},
        Case{{2, 128, 256}, {2, 128, 2}, {256, 256}, {2, 2},
             "#fp8.groups<128, dim = 2>", "#fp8.blocks<128, 128>",
             {1, 1, 128, 128, 128}}})
    for (const char *rule : {"pow2", "fp32"}) {
      SCOPED_TRACE(std::string(k.gran) + " scale " + rule);
      std::string x = type(k.x, "f32"), q = type(k.x, elt),
                  s = type(k.scale, "f32"), qt = type(k.dataT, elt),
                  st = type(k.scaleT, "f32");
      std::string results = q + ", " + s + ", " + qt + ", " + st;
      std::string src = "func.func @f(%x: " + x + ") -> (" + results +
                        ") {\n  %q, %s, %qt, %st = fp8.quantize_dual %x to " +
                        fmt + " by " +
                        k.gran + " and transposed by " + k.granT + " scale " +
                        rule + " : " + x + " -> " + results +
                        "\n  return %q, %s, %qt, %st : " + results + "\n}\n";
      Tensor in = draw(k.x, rng);
      SmallVector<Tensor> expected = interpret(src, {in});
      ASSERT_EQ(expected.size(), 4u);
      Call c;
      int xi = c.add(k.x, INFIR2RT_F32);
      int qi = c.add(k.x, dt), si = c.add(k.scale, INFIR2RT_F32);
      int qti = c.add(k.dataT, dt),
          sti = c.add(k.scaleT, INFIR2RT_F32);
      std::vector<double> attrs = {e5m2 ? 1.0 : 0.0,
                                   std::string(rule) == "pow2" ? 1.0 : 0.0};
      attrs.insert(attrs.end(), k.blocks.begin(), k.blocks.end());
      c.attrs(attrs);
      for (int64_t i = 0; i < in.getNumElements(); ++i)
        c.f32(xi)[i] = float(in.data[i]);
      ASSERT_EQ(c.run(infir2rt_quantize_dual), 0);
      int64_t mismatches = 0;
      for (auto [out, scale, idx] :
           {std::tuple<int, int, int>{qi, si, 0}, {qti, sti, 2}}) {
        const Tensor &data = expected[idx], &scales = expected[idx + 1];
        for (int64_t i = 0; i < data.getNumElements(); ++i) // codes, ±0 too
          mismatches += c.u8(out)[i] !=
                        infir2::rt::floatToFP8(float(data.data[i]), fmtEnum);
        for (int64_t i = 0; i < scales.getNumElements(); ++i)
          mismatches += double(c.f32(scale)[i]) != scales.data[i];
      }
      EXPECT_EQ(mismatches, 0);
    }
}

/// `t` (rank 2) quantized to E4M3 by the runtime in 1 x 128 groups (`rows`
/// 1) or 128 x 128 blocks: a quantize call whose operands 1 and 2 then hold
/// the data and the scales.
Call quantized(const Tensor &t, std::vector<int64_t> scaleShape, double rows,
               double pow2) {
  Call q;
  int in = q.add({t.shape[0], t.shape[1]}, INFIR2RT_F32);
  q.add({t.shape[0], t.shape[1]}, INFIR2RT_E4M3);
  q.add(scaleShape, INFIR2RT_F32);
  q.attrs({0.0, pow2, rows, 128});
  for (int64_t i = 0; i < t.getNumElements(); ++i)
    q.f32(in)[i] = float(t.data[i]);
  EXPECT_EQ(q.run(infir2rt_quantize), 0);
  return q;
}

TEST_P(KernelsVsInterpreter, ScaledMatmulAgrees) {
  bool fp32Scales = GetParam();
  std::mt19937_64 rng(seedFor("ScaledMatmulAgrees"));
  // Quantize x [256, 512] by 1x128 and w [384, 512] by 128x128 with the
  // runtime, then multiply with both.
  const char *rule = fp32Scales ? "fp32" : "pow2";
  std::string src =
      std::string(
          "func.func @f(%x: tensor<256x512xf32>, %w: tensor<384x512xf32>) -> "
          "tensor<256x384xf32> {\n"
          "  %xq, %xs = fp8.quantize %x to e4m3 by #fp8.groups<128, dim = 1> "
          "scale ") +
      rule +
      " : tensor<256x512xf32> -> tensor<256x512xf8E4M3FN>, "
      "tensor<256x4xf32>\n"
      "  %wq, %ws = fp8.quantize %w to e4m3 by #fp8.blocks<128, 128> scale " +
      rule +
      " : tensor<384x512xf32> -> tensor<384x512xf8E4M3FN>, tensor<3x4xf32>\n"
      "  %y = fp8.scaled_matmul (%xq, %xs by #fp8.groups<128, dim = 1>), "
      "(%wq, %ws by #fp8.blocks<128, 128>) : (tensor<256x512xf8E4M3FN>, "
      "tensor<256x4xf32>), (tensor<384x512xf8E4M3FN>, tensor<3x4xf32>) -> "
      "tensor<256x384xf32>\n"
      "  return %y : tensor<256x384xf32>\n}\n";
  Tensor x = draw({256, 512}, rng), w = draw({384, 512}, rng);
  SmallVector<Tensor> expected = interpret(src, {x, w});
  ASSERT_EQ(expected.size(), 1u);

  double pow2 = fp32Scales ? 0.0 : 1.0;
  Call qx = quantized(x, {256, 4}, 1, pow2), qw = quantized(w, {3, 4}, 128, pow2);
  const int xq = 1, xs = 2, wq = 1, ws = 2; // quantize's data and scales
  Call mm;
  int a = mm.add({256, 512}, INFIR2RT_E4M3),
      as = mm.add({256, 4}, INFIR2RT_F32),
      b = mm.add({384, 512}, INFIR2RT_E4M3), bs = mm.add({3, 4}, INFIR2RT_F32),
      y = mm.add({256, 384}, INFIR2RT_F32);
  mm.attrs({1, 128, 128, 128, 0.0}); // blocks, then has_acc
  std::memcpy(mm.u8(a), qx.u8(xq), 256 * 512);
  std::memcpy(mm.f32(as), qx.f32(xs), 256 * 4 * 4);
  std::memcpy(mm.u8(b), qw.u8(wq), 384 * 512);
  std::memcpy(mm.f32(bs), qw.f32(ws), 3 * 4 * 4);
  ASSERT_EQ(mm.run(infir2rt_scaled_matmul), 0);

  // Rows span 10^±3 in scale: errors are measured against each row's RMS.
  double worst = worstRowError(expected[0], mm.f32(y), 256, 384);
  // The bound: the operands dequantize exactly enough (FP64 in the
  // interpreter, FP32 products of 4-bit mantissas here), so the difference
  // is the FP32 sum of K = 512 products, about sqrt(K)·2^-24 ≈ 1.4e-6 of
  // Σ|a·b|; for Gaussian rows Σ|a·b| ≈ sqrt(K)·(2/π) ≈ 14 times the row's
  // RMS, so about 2e-5 of the RMS for the worst of 98,304 outputs (observed
  // over 80 seeds: up to 1.4e-5). A wrong scale or FP8 code is off by a
  // percent or more.
  std::printf("worst error relative to its row's RMS: %.3g\n", worst);
  EXPECT_LE(worst, 5e-5) << "worst error relative to its row's RMS";
}

// scaled_matmul with an accumulator (a weight gradient added to its FP32
// accumulator, a BF16 residual): the result is acc + the product, rounded
// once to the accumulator's type, in a buffer of its own and
// in place (the result and the accumulator one buffer, as the planner lays
// out a training step), against the interpreter's FP64 acc + product. The
// accumulator's entries are N(0, 1) times each row's product RMS, so a
// dropped or doubled accumulator is off by about the row's RMS; the bound
// is ScaledMatmulAgrees' plus one FP32 rounding of the sum.
TEST_P(KernelsVsInterpreter, ScaledMatmulAccumulates) {
  bool fp32Scales = GetParam();
  std::mt19937_64 rng(seedFor("ScaledMatmulAccumulates"));
  const char *rule = fp32Scales ? "fp32" : "pow2";
  // An FP32 accumulator (a weight gradient's) and a BF16 one (a residual
  // or a sum of gradients: acc + product rounded once to BF16, within 2^-9
  // of each value, so within 1e-2 of its row's RMS).
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16 accumulator" : "f32 accumulator");
    std::string t = bf16 ? "tensor<128x256xbf16>" : "tensor<128x256xf32>";
    std::string src =
        "func.func @f(%x: tensor<128x256xf32>, %w: tensor<256x256xf32>, "
        "%acc: " +
        t + ") -> " + t +
        " {\n"
        "  %xq, %xs = fp8.quantize %x to e4m3 by #fp8.groups<128, dim = 1> "
        "scale " +
        rule +
        " : tensor<128x256xf32> -> tensor<128x256xf8E4M3FN>, "
        "tensor<128x2xf32>\n"
        "  %wq, %ws = fp8.quantize %w to e4m3 by #fp8.groups<128, dim = 1> "
        "scale " +
        rule +
        " : tensor<256x256xf32> -> tensor<256x256xf8E4M3FN>, "
        "tensor<256x2xf32>\n"
        "  %y = fp8.scaled_matmul (%xq, %xs by #fp8.groups<128, dim = 1>), "
        "(%wq, %ws by #fp8.groups<128, dim = 1>) acc(%acc : " +
        t +
        ") "
        ": (tensor<128x256xf8E4M3FN>, tensor<128x2xf32>), "
        "(tensor<256x256xf8E4M3FN>, "
        "tensor<256x2xf32>) -> " +
        t +
        "\n"
        "  return %y : " +
        t + "\n}\n";
    Tensor x = draw({128, 256}, rng), w = draw({256, 256}, rng);
    // Each row's accumulator at the scale of its product (about sqrt(K)
    // times the product of the two rows' scales), in the accumulator's type.
    Tensor acc(SmallVector<int64_t>{128, 256});
    std::normal_distribution<double> normal;
    for (int64_t i = 0; i < 128; ++i) {
      double rx = 0.0;
      for (int64_t k = 0; k < 256; ++k)
        rx += x.data[i * 256 + k] * x.data[i * 256 + k];
      for (int64_t j = 0; j < 256; ++j) {
        float v = float(normal(rng) * std::sqrt(rx));
        acc.data[i * 256 + j] =
            bf16 ? infir2::rt::bf16ToFloat(infir2::rt::floatToBF16(v)) : v;
      }
    }
    SmallVector<Tensor> expected = interpret(src, {x, w, acc});
    ASSERT_EQ(expected.size(), 1u);

    double pow2 = fp32Scales ? 0.0 : 1.0;
    Call q = quantized(x, {128, 2}, 1, pow2),
         qw = quantized(w, {256, 2}, 1, pow2);
    const int xq = 1, xs = 2, wq = 1, ws = 2; // quantize's data and scales
    int64_t type = bf16 ? INFIR2RT_BF16 : INFIR2RT_F32;
    for (bool inPlace : {false, true}) {
      SCOPED_TRACE(inPlace ? "in place" : "a result of its own");
      Call mm;
      int a = mm.add({128, 256}, INFIR2RT_E4M3),
          as = mm.add({128, 2}, INFIR2RT_F32),
          b = mm.add({256, 256}, INFIR2RT_E4M3),
          bs = mm.add({256, 2}, INFIR2RT_F32), y = mm.add({128, 256}, type),
          ac = mm.add({128, 256}, type);
      mm.attrs({1, 128, 1, 128, 1.0});
      std::memcpy(mm.u8(a), q.u8(xq), 128 * 256);
      std::memcpy(mm.f32(as), q.f32(xs), 128 * 2 * 4);
      std::memcpy(mm.u8(b), qw.u8(wq), 256 * 256);
      std::memcpy(mm.f32(bs), qw.f32(ws), 256 * 2 * 4);
      auto put = [&](int operand, int64_t i, float v) {
        if (bf16)
          reinterpret_cast<uint16_t *>(mm.u8(operand))[i] =
              infir2::rt::floatToBF16(v);
        else
          mm.f32(operand)[i] = v;
      };
      for (int64_t i = 0; i < acc.getNumElements(); ++i) {
        put(ac, i, float(acc.data[i]));
        put(y, i, inPlace ? float(acc.data[i]) : 1e30f); // poisoned
      }
      if (inPlace) // the accumulator's descriptor addresses the result
        mm.desc[2 + ac * INFIR2RT_OPERAND_WORDS + 3] =
            mm.desc[2 + y * INFIR2RT_OPERAND_WORDS + 3];
      ASSERT_EQ(mm.run(infir2rt_scaled_matmul), 0);
      std::vector<float> got(128 * 256);
      for (int64_t i = 0; i < 128 * 256; ++i)
        got[i] = bf16 ? infir2::rt::bf16ToFloat(
                            reinterpret_cast<uint16_t *>(mm.u8(y))[i])
                      : mm.f32(y)[i];
      double worst = worstRowError(expected[0], got.data(), 128, 256);
      std::printf("worst error relative to its row's RMS: %.3g\n", worst);
      if (!bf16) {
        EXPECT_LE(worst, 5e-5) << "worst error relative to its row's RMS";
        continue;
      }
      // BF16: both round acc + product once, from FP32 sums that differ by
      // ScaledMatmulAgrees' bound, so each value within one BF16 ulp (2^-7
      // of it) plus that bound.
      for (int64_t i = 0; i < 128; ++i) {
        double rms = 0.0;
        for (int64_t j = 0; j < 256; ++j)
          rms += expected[0].data[i * 256 + j] * expected[0].data[i * 256 + j];
        rms = std::sqrt(rms / 256);
        for (int64_t j = 0; j < 256; ++j) {
          double e = expected[0].data[i * 256 + j];
          ASSERT_LE(std::fabs(got[i * 256 + j] - e),
                    std::ldexp(std::fabs(e), -7) + 5e-5 * rms)
              << "element [" << i << "][" << j << "]";
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, KernelsVsInterpreter, ::testing::Bool());

// A block holding NaN or ±inf has no scale: the call fails and names it,
// whether the bad value comes first, last or amid finite ones.
TEST(RuntimeQuantize, NonFiniteBlocksAreRefused) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()})
    for (int position : {0, 77, 127}) {
      Call c;
      int in = c.add({2, 256}, INFIR2RT_F32),
          q = c.add({2, 256}, INFIR2RT_E4M3);
      int s = c.add({2, 2}, INFIR2RT_F32);
      (void)q;
      (void)s;
      c.attrs({0.0, 1.0, 1, 128});
      for (int i = 0; i < 512; ++i)
        c.f32(in)[i] = 0.25f * float(i % 13) - 1.0f;
      c.f32(in)[256 + 128 + position] = bad; // row 1, second block
      infir2rt_context ctx{};
      ctx.regions[0] = ctx.regions[1] = c.host.data();
      // The status a trainer skips the step on, not an error.
      ASSERT_EQ(infir2rt_quantize(&ctx, c.desc.data(), "q"), INFIR2RT_NONFINITE);
      EXPECT_EQ(infir2::rt::callError(ctx),
                std::string("q: non-finite amax (") +
                    (std::isnan(bad) ? "nan" : "inf") +
                    ") in scale block 3: refusing to quantize it");
    }
}

} // namespace
