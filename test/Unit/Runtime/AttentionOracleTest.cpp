//===- AttentionOracleTest.cpp - CPU attention against FP64 ---------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CPU backend's attention and attention_grad against the FP64 oracle of
// AttentionOracle.h, within the bounds its FP32 arithmetic implies: causal
// and full, grouped-query, packed samples (segment ids), head sizes 64 and
// 128, FP32 operands and BF16 ones with BF16 results. The GPU's tests hold
// the tensor-core kernels to the same oracle (CudaAttentionTest.cpp).
//
//===----------------------------------------------------------------------===//

#include "AttentionOracle.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>

namespace {

using namespace infir2::test;

std::vector<uint8_t> runOnHost(const Call &c,
                               int32_t (*entry)(infir2rt_context *,
                                                const int64_t *,
                                                const char *)) {
  std::vector<uint8_t> mem = c.host;
  infir2rt_context ctx{};
  ctx.regions[0] = ctx.regions[1] = mem.data();
  EXPECT_EQ(entry(&ctx, c.desc.data(), "cpu"), 0);
  return mem;
}

TEST(CpuAttention, WithinTheBoundsOfAnFp64Oracle) {
  uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);
  const AttentionShape shapes[] = {
      {2, 96, 4, 2, 64, true, false},   {1, 130, 14, 2, 64, true, true},
      {1, 80, 4, 1, 128, false, false}, {2, 72, 4, 4, 128, false, true},
      {1, 17, 4, 2, 128, false, false}, {3, 40, 8, 2, 64, true, true},
  };
  for (const AttentionShape &sh : shapes)
    for (int64_t type : {INFIR2RT_F32, INFIR2RT_BF16}) {
      SCOPED_TRACE("seq " + std::to_string(sh.seq) + ", head_dim " +
                   std::to_string(sh.headDim) +
                   (sh.causal ? ", causal" : ", full") +
                   (sh.packed ? ", packed" : "") +
                   (type == INFIR2RT_F32 ? ", f32" : ", bf16"));
      Arithmetic cpu = kFp32Arithmetic;
      cpu.resultType = type;
      checkAttention(makeAttentionCase(sh, rng), type, cpu, runOnHost,
                     infir2rt_attention, infir2rt_attention_grad);
    }
}

} // namespace
