//===- ElementwiseChunksTest.cpp - Per-element kernels, a chunk at a time ===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CPU backend's per-element kernels (silu, swiglu, silu_grad,
// swiglu_grad) widen and round a chunk of 4096 elements at a time in each
// thread's own arrays. Checked element for element against the per-element
// math applied to the stored values (Elementwise.h; the math itself is
// checked against the interpreter and PyTorch elsewhere): sizes below, at
// and across chunk boundaries and past the threads' threshold, BF16 and FP32
// operands mixed, an output written over its input; and that a call on
// MLP-sized BF16 tensors takes nothing from the kernels' pool. Random
// values in [-6, 6]; the seed is printed.
//
//===----------------------------------------------------------------------===//

#include "DescriptorBuilder.h"
#include "infir2/runtime/Elementwise.h"
#include "infir2/runtime/Float.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace {

using infir2::test::Call;
using namespace infir2::rt;

constexpr uint64_t kSeed = 20261128;

/// Fills operand `i` (BF16 or F32) with random values in [-6, 6].
void fill(Call &c, int i, int64_t dtype, int64_t n, std::mt19937_64 &rng) {
  std::uniform_real_distribution<float> value(-6.0f, 6.0f);
  for (int64_t k = 0; k < n; ++k) {
    float v = value(rng);
    if (dtype == INFIR2RT_BF16)
      reinterpret_cast<uint16_t *>(c.u8(i))[k] = floatToBF16(v);
    else
      c.f32(i)[k] = v;
  }
}

float read(Call &c, int i, int64_t dtype, int64_t k) {
  return dtype == INFIR2RT_BF16
             ? bf16ToFloat(reinterpret_cast<const uint16_t *>(c.u8(i))[k])
             : c.f32(i)[k];
}

/// `v` as an operand of `dtype` stores it.
float rounded(float v, int64_t dtype) {
  return dtype == INFIR2RT_BF16 ? bf16ToFloat(floatToBF16(v)) : v;
}

/// Points operand `alias` at operand `to`'s storage (an in-place call).
void alias(Call &c, int aliasIndex, int to) {
  c.desc[2 + aliasIndex * INFIR2RT_OPERAND_WORDS + 3] = c.operands[to].first;
  c.operands[aliasIndex] = c.operands[to];
}

struct Types {
  int64_t in, out;
};

const char *nameOf(int64_t dtype) {
  return dtype == INFIR2RT_BF16 ? "bf16" : "f32";
}

void PrintTo(const Types &t, std::ostream *os) {
  *os << nameOf(t.in) << " to " << nameOf(t.out);
}

class ElementwiseChunks : public ::testing::TestWithParam<Types> {};

TEST_P(ElementwiseChunks, MatchThePerElementMath) {
  std::printf("seed %llu\n", (unsigned long long)kSeed);
  std::mt19937_64 rng(kSeed);
  Types t = GetParam();
  for (int64_t n : {int64_t(1), int64_t(4095), int64_t(4096), int64_t(4097),
                    int64_t(70001)}) {
    SCOPED_TRACE(::testing::Message() << n << " elements");
    { // silu, swiglu, silu_grad: one output.
      struct Unary {
        const char *name;
        int32_t (*entry)(infir2rt_context *, const int64_t *, const char *);
        int inputs;
        float (*math)(float, float);
      };
      for (Unary u :
           {Unary{"silu", infir2rt_silu, 1,
                  [](float x, float) { return siluOf(x); }},
            Unary{"swiglu", infir2rt_swiglu, 2,
                  [](float g, float v) { return swigluOf(g, v); }},
            Unary{"silu_grad", infir2rt_silu_grad, 2,
                  [](float x, float d) { return siluGradOf(x, d); }}}) {
        SCOPED_TRACE(u.name);
        Call c;
        for (int k = 0; k < u.inputs; ++k)
          fill(c, c.add({n}, t.in), t.in, n, rng);
        int out = c.add({n}, t.out);
        ASSERT_EQ(c.run(u.entry), 0);
        for (int64_t k = 0; k < n; ++k) {
          float want = rounded(u.math(read(c, 0, t.in, k),
                                      u.inputs > 1 ? read(c, 1, t.in, k) : 0),
                               t.out);
          ASSERT_EQ(read(c, out, t.out, k), want) << "element " << k;
        }
      }
    }
    // swiglu_grad, its gate gradient written over the gate itself when the
    // types agree.
    Call c;
    int g = c.add({n}, t.in), u = c.add({n}, t.in), d = c.add({n}, t.in);
    int dg = c.add({n}, t.out), du = c.add({n}, t.out);
    for (int i : {g, u, d})
      fill(c, i, t.in, n, rng);
    std::vector<float> gate(n), up(n), dy(n);
    for (int64_t k = 0; k < n; ++k) {
      gate[k] = read(c, g, t.in, k);
      up[k] = read(c, u, t.in, k);
      dy[k] = read(c, d, t.in, k);
    }
    if (t.in == t.out)
      alias(c, dg, g);
    ASSERT_EQ(c.run(infir2rt_swiglu_grad), 0);
    for (int64_t k = 0; k < n; ++k) {
      float wantG, wantU;
      swigluGradOf(gate[k], up[k], dy[k], wantG, wantU);
      ASSERT_EQ(read(c, dg, t.out, k), rounded(wantG, t.out))
          << "element " << k;
      ASSERT_EQ(read(c, du, t.out, k), rounded(wantU, t.out))
          << "element " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, ElementwiseChunks,
                         ::testing::Values(Types{INFIR2RT_BF16, INFIR2RT_BF16},
                                           Types{INFIR2RT_F32, INFIR2RT_BF16},
                                           Types{INFIR2RT_BF16, INFIR2RT_F32},
                                           Types{INFIR2RT_F32, INFIR2RT_F32}),
                         [](const ::testing::TestParamInfo<Types> &info) {
                           return std::string(nameOf(info.param.in)) + "_to_" +
                                  nameOf(info.param.out);
                         });

// No whole FP32 copies: swiglu_grad on a BF16 [1024, 2816] tensor (the
// ~110 M model's MLP at 4 x 256 tokens) used to take five of 11 MiB each.
TEST(ElementwiseChunksPool, SwigluGradTakesNothingFromThePool) {
  std::mt19937_64 rng(kSeed);
  const int64_t n = 1024 * 2816;
  Call c;
  for (int k = 0; k < 3; ++k)
    fill(c, c.add({n}, INFIR2RT_BF16), INFIR2RT_BF16, n, rng);
  c.add({n}, INFIR2RT_BF16);
  c.add({n}, INFIR2RT_BF16);
  int64_t before = infir2rt_cpu_pool_bytes();
  ASSERT_EQ(c.run(infir2rt_swiglu_grad), 0);
  EXPECT_EQ(infir2rt_cpu_pool_bytes(), before);
}

} // namespace
