//===- CudaAttentionTest.cpp - GPU attention against FP64 -----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// attention and attention_grad on the GPU against the FP64 oracle of
// AttentionOracle.h: the tensor-core kernels (BF16 operands: P and dS
// rounded to BF16 before their products) and the FP32 kernels (FP32
// operands), each within the bound its arithmetic implies. 30 fresh draws
// of whole sequences and 30 of packed samples, over causal and full
// attention, 1 to 7 query heads per KV head, head sizes 64 and 128,
// sequences shorter than the kernels' 64-row blocks and not multiples of
// them, batches of 1 to 3. The
// bound follows the magnitudes of the summed terms, so that dQ's
// cancellation (dS = P ∘ (dP − Σ P·dP)) is allowed for and nothing else.
// The tensor-core gradient is also the same, bit for bit, every run (no
// atomics).
//
//===----------------------------------------------------------------------===//

#include "AttentionOracle.h"
#include "CudaTestSupport.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using namespace infir2::test;

std::vector<uint8_t> runGpu(const Call &c, Entry entry) {
  int32_t rc;
  std::string error;
  std::vector<uint8_t> mem = runOnGpu(c, entry, rc, error);
  EXPECT_EQ(rc, 0) << error;
  return mem;
}

class CudaAttention : public ::testing::TestWithParam<bool> {};

TEST_P(CudaAttention, WithinTheBoundsOfAnFp64Oracle) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  const bool packed = GetParam();
  const AttentionShape shapes[] = {
      {2, 96, 4, 2, 64, true, packed},   {1, 200, 14, 2, 64, true, packed},
      {2, 160, 4, 1, 128, true, packed}, {1, 256, 8, 4, 128, true, packed},
      {1, 130, 2, 2, 64, false, packed}, {1, 17, 4, 2, 128, false, packed},
      {3, 40, 8, 2, 64, true, packed},
  };
  for (int draw = 0; draw < 30; ++draw) {
    const AttentionShape &sh = shapes[draw % 7];
    // Every third draw on FP32 operands (the FP32 kernels); every other
    // one with BF16 results.
    bool fp32 = draw % 3 == 2;
    Arithmetic ar = fp32 ? kFp32Arithmetic : Arithmetic{0x1p-8, 0x1p-8, 0};
    ar.resultType = draw % 2 ? INFIR2RT_BF16 : INFIR2RT_F32;
    SCOPED_TRACE("draw " + std::to_string(draw) + ": seq " +
                 std::to_string(sh.seq) + ", heads " +
                 std::to_string(sh.heads) + "/" + std::to_string(sh.kvHeads) +
                 ", head_dim " + std::to_string(sh.headDim) +
                 (sh.causal ? ", causal" : ", full") +
                 (fp32 ? ", f32 operands" : ", bf16 operands"));
    std::printf("draw %d\n", draw);
    checkAttention(makeAttentionCase(sh, rng),
                   fp32 ? INFIR2RT_F32 : INFIR2RT_BF16, ar, runGpu,
                   infir2rt_cuda_attention, infir2rt_cuda_attention_grad);
    if (HasFailure())
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(Segments, CudaAttention, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &i) {
                           return i.param ? "Packed" : "Whole";
                         });

// The tensor-core gradient twice on the same operands: the same bytes.
TEST(CudaAttentionGrad, IsTheSameEveryRun) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  AttentionCase c = makeAttentionCase({2, 300, 14, 2, 64, true, true}, rng);
  Call call;
  int64_t qw = 14 * 64, kw = 2 * 64;
  int q = call.add({2, 300, qw}, INFIR2RT_BF16),
      k = call.add({2, 300, kw}, INFIR2RT_BF16),
      v = call.add({2, 300, kw}, INFIR2RT_BF16),
      g = call.add({2, 300, qw}, INFIR2RT_BF16);
  call.add({2, 300, qw}, INFIR2RT_F32);
  call.add({2, 300, kw}, INFIR2RT_F32);
  call.add({2, 300, kw}, INFIR2RT_F32);
  int seg = call.add({2, 300}, INFIR2RT_I32);
  call.attrs({14, 2, 64, double(c.scale), 1.0, 1.0});
  std::pair<int, const std::vector<float> *> inputs[] = {
      {q, &c.q}, {k, &c.k}, {v, &c.v}, {g, &c.dout}};
  for (auto [i, x] : inputs)
    for (size_t j = 0; j < x->size(); ++j) {
      uint16_t h = infir2::rt::floatToBF16((*x)[j]);
      std::memcpy(call.u8(i) + 2 * j, &h, 2);
    }
  std::memcpy(call.u8(seg), c.segments.data(), c.segments.size() * 4);
  std::vector<uint8_t> first = runGpu(call, infir2rt_cuda_attention_grad),
                       second = runGpu(call, infir2rt_cuda_attention_grad);
  expectSameBytes(call, 4, first, second);
}

} // namespace
