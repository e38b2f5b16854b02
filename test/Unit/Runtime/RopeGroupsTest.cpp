//===- RopeGroupsTest.cpp - rope over several tensors in one call ---------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CPU runtime's rope with two groups of (input, positions, out) in one
// call (ABI version 8: a layer's q and k), forward and backward, against
// the reference interpreter's rope and rope_grad (FP64) on the same inputs:
// each output within 1e-6 of its row's largest input (FP32 products and an
// FP32 cosine and sine of an FP64 angle). The groups share positions, which
// the runtime turns into angles once; a second call whose k has positions
// of its own checks that they are not shared by mistake. The seed is
// printed.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/ABI.h"

#include "DescriptorBuilder.h"
#include "InterpreterOracle.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>

namespace {

using infir2::interp::Tensor;
using infir2::test::Call;

TEST(RopeGroups, MatchTheInterpreter) {
  uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> position(0, 4000);
  infir2::test::InterpreterOracle oracle;
  Tensor q(llvm::SmallVector<int64_t>{2, 8, 128}),
      k(llvm::SmallVector<int64_t>{2, 8, 64}),
      pq(llvm::SmallVector<int64_t>{2, 8}), pk(llvm::SmallVector<int64_t>{2, 8});
  for (double &v : q.data)
    v = double(float(normal(rng)));
  for (double &v : k.data)
    v = double(float(normal(rng)));
  for (double &v : pq.data)
    v = position(rng);
  for (double &v : pk.data)
    v = position(rng);
  for (bool shared : {true, false})
    for (double direction : {1.0, -1.0}) {
      SCOPED_TRACE(std::string(direction > 0 ? "rope" : "rope_grad") +
                   (shared ? ", shared positions" : ", positions of its own"));
      std::string op = direction > 0 ? "infir2.rope" : "infir2.rope_grad";
      const Tensor &kPositions = shared ? pq : pk;
      llvm::SmallVector<Tensor> want = oracle.interpret(
          "func.func @f(%q: tensor<2x8x128xf32>, %k: tensor<2x8x64xf32>, "
          "%pq: tensor<2x8xi32>, %pk: tensor<2x8xi32>) -> "
          "(tensor<2x8x128xf32>, tensor<2x8x64xf32>) {\n"
          "  %a = " + op + " %q, %pq {head_dim = 32 : i64, theta = 1.0e4 : "
          "f64} : tensor<2x8x128xf32>, tensor<2x8xi32>\n"
          "  %b = " + op + " %k, %pk {head_dim = 32 : i64, theta = 1.0e4 : "
          "f64} : tensor<2x8x64xf32>, tensor<2x8xi32>\n"
          "  return %a, %b : tensor<2x8x128xf32>, tensor<2x8x64xf32>\n}\n",
          {q, k, pq, kPositions});
      ASSERT_EQ(want.size(), 2u);
      Call c;
      int qi = c.add({2, 8, 128}, INFIR2RT_F32), p1 = c.add({2, 8}, INFIR2RT_I32),
          qo = c.add({2, 8, 128}, INFIR2RT_F32),
          ki = c.add({2, 8, 64}, INFIR2RT_F32), p2 = c.add({2, 8}, INFIR2RT_I32),
          ko = c.add({2, 8, 64}, INFIR2RT_F32);
      c.attrs({32, 1e4, direction});
      for (int64_t i = 0; i < q.getNumElements(); ++i)
        c.f32(qi)[i] = float(q.data[i]);
      for (int64_t i = 0; i < k.getNumElements(); ++i)
        c.f32(ki)[i] = float(k.data[i]);
      for (int64_t i = 0; i < 16; ++i) {
        reinterpret_cast<int32_t *>(c.u8(p1))[i] = int32_t(pq.data[i]);
        reinterpret_cast<int32_t *>(c.u8(p2))[i] = int32_t(kPositions.data[i]);
      }
      if (shared) // one positions buffer, as the compiled step passes it
        c.desc[2 + p2 * INFIR2RT_OPERAND_WORDS + 3] =
            c.desc[2 + p1 * INFIR2RT_OPERAND_WORDS + 3];
      ASSERT_EQ(c.run(infir2rt_rope), 0);
      for (auto [out, index, width] :
           {std::tuple{qo, 0, int64_t(128)}, std::tuple{ko, 1, int64_t(64)}}) {
        const Tensor &w = want[index];
        for (int64_t r = 0; r < 16; ++r) {
          double largest = 0.0;
          for (int64_t j = 0; j < width; ++j)
            largest = std::max(largest, std::fabs(w.data[r * width + j]));
          for (int64_t j = 0; j < width; ++j)
            ASSERT_LE(std::fabs(c.f32(out)[r * width + j] -
                                w.data[r * width + j]),
                      1e-6 * largest + 1e-30)
                << "tensor " << index << " element [" << r << "][" << j
                << "]";
        }
      }
    }
}

} // namespace
