//===- MxFp8Test.cpp - MXFP8 on the CPU backend against the oracle --------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// MX blocks (#fp8.mx: 32 elements along K share one E8M0 scale) through the
// CPU runtime's quantize / quantize_dual / scaled_matmul entry points, with
// E8M0 scale buffers, against the reference interpreter running the same
// fp8 ops (APFloat roundings; the interpreter is itself checked against a
// transcription of the OCP MX specification in mx-spec-oracle.test).
// Quantized values and scales must be identical, under both power-of-two
// rules (pow2, rounded up; floor, the specification's, which saturates a
// block's largest values); the GEMM, FP32
// accumulation against FP64 of the same FP8 operands, within 5e-5 of each
// output row's RMS (KernelsVsInterpreterTest's bound, same K scale).
// Inputs: N(0, 1) times 10^U(-12, 12) per 32-block, plus the hard cases
// (zero blocks, amax exactly 448·2^j and one FP32 step above it, a large
// outlier whose neighbours flush); the seed is printed.
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
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

using namespace mlir;
using infir2::interp::Tensor;
using infir2::test::Call;
using infir2::test::worstRowError;

namespace {

uint64_t seedFor(const char *test) {
  uint64_t seed = std::random_device{}();
  std::printf("%s: seed %llu\n", test, (unsigned long long)seed);
  return seed;
}

/// [rows, cols] (or [b, rows / b, cols]) with 32-element blocks along the
/// last dimension spanning 10^±12, and every sixth block a hard case.
Tensor draw(std::vector<int64_t> shape, std::mt19937_64 &rng) {
  Tensor t(shape);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> exponent(-12.0f, 12.0f);
  std::uniform_int_distribution<int> j(-20, 20), at(0, 31);
  for (int64_t b = 0; b < t.getNumElements() / 32; ++b) {
    double *x = t.data.data() + b * 32;
    float mag = std::pow(10.0f, exponent(rng));
    for (int i = 0; i < 32; ++i)
      x[i] = double(normal(rng) * mag);
    switch (b % 6) {
    case 1: // a zero block: scale 1
      std::fill(x, x + 32, 0.0);
      break;
    case 2: // amax 448·2^j exactly: the scale is 2^j, nothing rounds up
    case 3: // or one FP32 step above it: the scale doubles
    {
      // The rest well below it (|N(0, 1)| · 10 < 448), so that it is the
      // amax.
      int e = j(rng);
      for (int i = 0; i < 32; ++i)
        x[i] = double(std::ldexp(float(x[i] / mag) * 10.0f, e));
      float top = b % 6 == 2 ? 448.0f : std::nextafter(448.0f, 1e9f);
      x[at(rng)] = double(std::ldexp(top, e));
      break;
    }
    case 4: // an outlier: its neighbours round to subnormals or zero
      x[at(rng)] = double(mag * 1e5f);
      break;
    default:
      break;
    }
  }
  return t;
}

void fillF32(Call &c, int operand, const Tensor &t) {
  for (int64_t i = 0; i < t.getNumElements(); ++i)
    c.f32(operand)[i] = float(t.data[i]);
}

/// Mismatches of FP8 codes `codes` and E8M0 scales `scales` against the
/// interpreter's values.
int64_t mismatches(Call &c, int codes, int scales, const Tensor &data,
                   const Tensor &scale, infir2::rt::FP8Format format) {
  int64_t bad = 0;
  for (int64_t i = 0; i < data.getNumElements(); ++i)
    bad +=
        double(infir2::rt::fp8ToFloat(c.u8(codes)[i], format)) != data.data[i];
  for (int64_t i = 0; i < scale.getNumElements(); ++i) {
    uint8_t code = c.u8(scales)[i];
    bad +=
        code == 0xff || double(infir2::rt::e8m0ToFloat(code)) != scale.data[i];
  }
  return bad;
}

/// The format (E5M2 when set) and the scale rule: pow2 (rounded up) or
/// floor (the OCP MX specification's, which saturates).
using Variant = std::tuple<bool, bool>;

class MxFp8 : public ::testing::TestWithParam<Variant> {
protected:
  infir2::test::InterpreterOracle oracle;
};

TEST_P(MxFp8, QuantizeIsIdentical) {
  auto [e5m2, floor] = GetParam();
  std::mt19937_64 rng(seedFor("MxFp8.QuantizeIsIdentical"));
  std::string elt = e5m2 ? "f8E5M2" : "f8E4M3FN";
  std::string src =
      "func.func @f(%x: tensor<96x256xf32>) -> (tensor<96x256x" + elt +
      ">, tensor<96x8xf8E8M0FNU>) {\n  %q, %s = fp8.quantize %x to " +
      (e5m2 ? "e5m2" : "e4m3") + " by #fp8.mx<dim = 1> scale " +
      (floor ? "floor" : "pow2") +
      " : tensor<96x256xf32> -> "
      "tensor<96x256x" +
      elt + ">, tensor<96x8xf8E8M0FNU>\n  return %q, %s : tensor<96x256x" +
      elt + ">, tensor<96x8xf8E8M0FNU>\n}\n";
  Tensor x = draw({96, 256}, rng);
  SmallVector<Tensor> want = oracle.interpret(src, {x});
  ASSERT_EQ(want.size(), 2u);

  Call c;
  int in = c.add({96, 256}, INFIR2RT_F32);
  int q = c.add({96, 256}, e5m2 ? INFIR2RT_E5M2 : INFIR2RT_E4M3);
  int s = c.add({96, 8}, INFIR2RT_E8M0);
  c.attrs({e5m2 ? 1.0 : 0.0, floor ? 2.0 : 1.0, 1, 32}); // scale_rule
  fillF32(c, in, x);
  ASSERT_EQ(c.run(infir2rt_quantize), 0);
  EXPECT_EQ(mismatches(c, q, s, want[0], want[1],
                       e5m2 ? infir2::rt::FP8Format::E5M2
                            : infir2::rt::FP8Format::E4M3),
            0);
}

// Both layouts of an activation: MX blocks along the features, and the
// column-wise copy [K, T] in MX blocks along the tokens.
TEST_P(MxFp8, QuantizeDualIsIdentical) {
  auto [e5m2, floor] = GetParam();
  std::mt19937_64 rng(seedFor("MxFp8.QuantizeDualIsIdentical"));
  std::string elt = e5m2 ? "f8E5M2" : "f8E4M3FN";
  std::string types = "tensor<2x64x160x" + elt +
                      ">, tensor<2x64x5xf8E8M0FNU>, tensor<160x128x" + elt +
                      ">, tensor<160x4xf8E8M0FNU>";
  std::string src = "func.func @f(%x: tensor<2x64x160xf32>) -> (" + types +
                    ") {\n  %q, %s, %qt, %st = fp8.quantize_dual %x to " +
                    (e5m2 ? "e5m2" : "e4m3") +
                    " by #fp8.mx<dim = 2> and transposed by #fp8.mx<dim = "
                    "1> scale " +
                    (floor ? "floor" : "pow2") + " : tensor<2x64x160xf32> -> " +
                    types + "\n  return %q, %s, %qt, %st : " + types + "\n}\n";
  Tensor x = draw({2, 64, 160}, rng);
  SmallVector<Tensor> want = oracle.interpret(src, {x});
  ASSERT_EQ(want.size(), 4u);

  Call c;
  int64_t fmt = e5m2 ? INFIR2RT_E5M2 : INFIR2RT_E4M3;
  int in = c.add({2, 64, 160}, INFIR2RT_F32);
  int q = c.add({2, 64, 160}, fmt), s = c.add({2, 64, 5}, INFIR2RT_E8M0);
  int qt = c.add({160, 128}, fmt), st = c.add({160, 4}, INFIR2RT_E8M0);
  c.attrs({e5m2 ? 1.0 : 0.0, floor ? 2.0 : 1.0, 1, 1, 32, 1, 32});
  fillF32(c, in, x);
  ASSERT_EQ(c.run(infir2rt_quantize_dual), 0);
  auto format =
      e5m2 ? infir2::rt::FP8Format::E5M2 : infir2::rt::FP8Format::E4M3;
  EXPECT_EQ(mismatches(c, q, s, want[0], want[1], format), 0) << "row-wise";
  EXPECT_EQ(mismatches(c, qt, st, want[2], want[3], format), 0)
      << "column-wise";
}

// The GEMM of two MX operands, without and with an FP32 accumulator, on
// the CPU backend's codes and scales (quantized by it) against the
// interpreter's FP64 product of its own identical codes.
TEST(MxFp8Gemm, ScaledMatmulAgrees) {
  std::mt19937_64 rng(seedFor("MxFp8Gemm.ScaledMatmulAgrees"));
  infir2::test::InterpreterOracle oracle;
  // Rows of N(0, 1) times 10^U(-3, 3): products of a useful size.
  auto rows = [&](int64_t n, int64_t k) {
    Tensor t(SmallVector<int64_t>{n, k});
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> e(-3.0f, 3.0f);
    for (int64_t i = 0; i < n; ++i) {
      float m = std::pow(10.0f, e(rng));
      for (int64_t j = 0; j < k; ++j)
        t.data[i * k + j] = double(normal(rng) * m);
    }
    return t;
  };
  Tensor x = rows(128, 256), w = rows(192, 256);
  Tensor product(SmallVector<int64_t>{128, 192}); // the first round's result
  for (bool accumulate : {false, true}) {
    SCOPED_TRACE(accumulate ? "with an accumulator" : "without");
    std::string acc = accumulate ? ", %acc: tensor<128x192xf32>" : "";
    std::string src =
        "func.func @f(%x: tensor<128x256xf32>, %w: tensor<192x256xf32>" + acc +
        ") -> tensor<128x192xf32> {\n"
        "  %xq, %xs = fp8.quantize %x to e4m3 by #fp8.mx<dim = 1> scale pow2 "
        ": tensor<128x256xf32> -> tensor<128x256xf8E4M3FN>, "
        "tensor<128x8xf8E8M0FNU>\n"
        "  %wq, %ws = fp8.quantize %w to e4m3 by #fp8.mx<dim = 1> scale pow2 "
        ": tensor<192x256xf32> -> tensor<192x256xf8E4M3FN>, "
        "tensor<192x8xf8E8M0FNU>\n"
        "  %y = fp8.scaled_matmul (%xq, %xs by #fp8.mx<dim = 1>), (%wq, %ws "
        "by #fp8.mx<dim = 1>) " +
        (accumulate ? "acc(%acc : tensor<128x192xf32>) " : "") +
        ": (tensor<128x256xf8E4M3FN>, tensor<128x8xf8E8M0FNU>), "
        "(tensor<192x256xf8E4M3FN>, tensor<192x8xf8E8M0FNU>) -> "
        "tensor<128x192xf32>\n  return %y : tensor<128x192xf32>\n}\n";
    // The accumulator at the size of the product it is added to, so that
    // a dropped or doubled one is off by about the result itself.
    Tensor a(SmallVector<int64_t>{128, 192});
    std::normal_distribution<double> normal;
    for (int64_t i = 0; i < a.getNumElements(); ++i)
      a.data[i] = double(float(normal(rng) * product.data[i]));
    SmallVector<Tensor> inputs = {x, w};
    if (accumulate)
      inputs.push_back(a);
    SmallVector<Tensor> want = oracle.interpret(src, inputs);
    ASSERT_EQ(want.size(), 1u);
    product = want[0];

    Call mm;
    int xq = mm.add({128, 256}, INFIR2RT_E4M3),
        xs = mm.add({128, 8}, INFIR2RT_E8M0),
        wq = mm.add({192, 256}, INFIR2RT_E4M3),
        ws = mm.add({192, 8}, INFIR2RT_E8M0),
        y = mm.add({128, 192}, INFIR2RT_F32);
    int accOperand = accumulate ? mm.add({128, 192}, INFIR2RT_F32) : -1;
    mm.attrs({1, 32, 1, 32, accumulate ? 1.0 : 0.0});
    for (auto [t, codes, scales] :
         {std::tuple<const Tensor *, int, int>{&x, xq, xs}, {&w, wq, ws}}) {
      Call q;
      int in = q.add({t->shape[0], 256}, INFIR2RT_F32);
      q.add({t->shape[0], 256}, INFIR2RT_E4M3);
      q.add({t->shape[0], 8}, INFIR2RT_E8M0);
      q.attrs({0.0, 1.0, 1, 32});
      fillF32(q, in, *t);
      ASSERT_EQ(q.run(infir2rt_quantize), 0);
      std::memcpy(mm.u8(codes), q.u8(1), t->getNumElements());
      std::memcpy(mm.u8(scales), q.u8(2), t->shape[0] * 8);
    }
    if (accumulate)
      fillF32(mm, accOperand, a);
    ASSERT_EQ(mm.run(infir2rt_scaled_matmul), 0);
    double worst = worstRowError(want[0], mm.f32(y), 128, 192);
    std::printf("worst error relative to its row's RMS: %.3g\n", worst);
    EXPECT_LE(worst, 5e-5);
  }
}

// A block holding NaN or ±inf has no scale: the call fails and names the
// block, as with the other granularities (E8M0 has a NaN code, 0xff, which
// a quantizer must never write).
TEST(MxFp8Errors, NonFiniteBlockIsRefused) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity()}) {
    Call c;
    int in = c.add({2, 64}, INFIR2RT_F32);
    c.add({2, 64}, INFIR2RT_E4M3);
    c.add({2, 2}, INFIR2RT_E8M0);
    c.attrs({0.0, 1.0, 1, 32});
    for (int i = 0; i < 128; ++i)
      c.f32(in)[i] = 0.25f * float(i % 13) - 1.0f;
    c.f32(in)[64 + 32 + 5] = bad; // row 1, second block
    infir2rt_context ctx{};
    ctx.regions[0] = ctx.regions[1] = c.host.data();
    ASSERT_EQ(infir2rt_quantize(&ctx, c.desc.data(), "q"), INFIR2RT_NONFINITE);
    EXPECT_EQ(infir2::rt::callError(ctx),
              std::string("q: non-finite amax (") +
                  (std::isnan(bad) ? "nan" : "inf") +
                  ") in scale block 3: refusing to quantize it");
  }
}

// A scale_rule word beyond 0..2, or E8M0 scales under the fp32 rule (whose
// scales E8M0 cannot hold), is refused by name: not taken as pow2.
TEST(MxFp8Errors, BadScaleRuleIsRefused) {
  for (auto [rule, dtype, why] :
       {std::tuple<double, int64_t, const char *>{
            3.0, INFIR2RT_E8M0,
            "scale_rule must be 0 (fp32), 1 (pow2) or 2 (floor)"},
        {-1.0, INFIR2RT_F32,
         "scale_rule must be 0 (fp32), 1 (pow2) or 2 (floor)"},
        {0.0, INFIR2RT_E8M0,
         "E8M0 scales take a power-of-two scale rule (pow2 or floor), not "
         "fp32"}}) {
    Call c;
    int in = c.add({2, 64}, INFIR2RT_F32);
    c.add({2, 64}, INFIR2RT_E4M3);
    c.add({2, 2}, dtype);
    c.attrs({0.0, rule, 1, 32});
    for (int i = 0; i < 128; ++i)
      c.f32(in)[i] = 0.25f * float(i % 13) - 1.0f;
    infir2rt_context ctx{};
    ctx.regions[0] = ctx.regions[1] = c.host.data();
    EXPECT_NE(infir2rt_quantize(&ctx, c.desc.data(), "q"), 0);
    EXPECT_EQ(infir2::rt::callError(ctx), std::string("q: ") + why);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, MxFp8, ::testing::Combine(::testing::Bool(), ::testing::Bool()),
    [](const ::testing::TestParamInfo<Variant> &info) {
      return std::string(std::get<0>(info.param) ? "e5m2" : "e4m3") +
             (std::get<1>(info.param) ? "_floor" : "_pow2");
    });

} // namespace
