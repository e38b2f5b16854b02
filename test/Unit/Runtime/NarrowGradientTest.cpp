//===- NarrowGradientTest.cpp - Cross-entropy's gradient made narrower ----===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// `infir2.cross_entropy_grad` of FP32 logits with a BF16 result (what
// --infir2-fold-conversions makes of the LM head's gradient and its
// conversion) on the CPU backend: every element is the FP32 gradient's
// rounded to BF16, byte for byte (the same value rounded once), with and
// without a mask and at a vocabulary that is not a multiple of the
// kernels' vector width. Random logits from a printed seed.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Error.h"
#include "infir2/runtime/Float.h"

#include "DescriptorBuilder.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>

namespace {

using infir2::test::Call;

TEST(NarrowGradient, CrossEntropyGradRoundsTheFP32GradientOnce) {
  uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (bool masked : {false, true})
    for (int64_t vocab : {256, 333}) {
      SCOPED_TRACE(std::string(masked ? "masked" : "unmasked") + ", vocab " +
                   std::to_string(vocab));
      const int64_t tokens = 24;
      auto build = [&](int64_t outType) {
        Call c;
        c.add({tokens, vocab}, INFIR2RT_F32);
        c.add({tokens}, INFIR2RT_I32);
        if (masked)
          c.add({tokens}, INFIR2RT_F32);
        c.add({}, INFIR2RT_F32);
        c.add({tokens, vocab}, outType);
        c.attrs({-100, masked ? 1.0 : 0.0, 0, 1});
        return c;
      };
      Call wide = build(INFIR2RT_F32), narrow = build(INFIR2RT_BF16);
      // The same inputs in both: logits, targets (some ignored), mask, d(loss).
      for (int64_t i = 0; i < tokens * vocab; ++i)
        wide.f32(0)[i] = normal(rng);
      auto *t = reinterpret_cast<int32_t *>(wide.u8(1));
      for (int64_t i = 0; i < tokens; ++i)
        t[i] = i % 7 == 3 ? -100 : int32_t(rng() % uint64_t(vocab));
      if (masked)
        for (int64_t i = 0; i < tokens; ++i)
          wide.f32(2)[i] = i % 5 == 0 ? 0.0f : 0.5f + float(i % 3);
      *wide.f32(masked ? 3 : 2) = 0.8125f;
      int out = masked ? 4 : 3;
      for (int i = 0; i < out; ++i)
        std::memcpy(narrow.u8(i), wide.u8(i), wide.operands[i].second);
      infir2rt_context ctx{};
      ctx.regions[0] = ctx.regions[1] = wide.host.data();
      ASSERT_EQ(infir2rt_cross_entropy_grad(&ctx, wide.desc.data(), "wide"), 0)
          << infir2::rt::callError(ctx);
      ctx.regions[0] = ctx.regions[1] = narrow.host.data();
      ASSERT_EQ(infir2rt_cross_entropy_grad(&ctx, narrow.desc.data(), "narrow"),
                0)
          << infir2::rt::callError(ctx);
      const auto *b = reinterpret_cast<const uint16_t *>(narrow.u8(out));
      int64_t differ = 0, nonzero = 0;
      for (int64_t i = 0; i < tokens * vocab; ++i) {
        differ += b[i] != infir2::rt::floatToBF16(wide.f32(out)[i]);
        nonzero += wide.f32(out)[i] != 0.0f;
      }
      EXPECT_EQ(differ, 0);
      EXPECT_GT(nonzero, tokens * vocab / 2); // not a test of zeros
    }
}

} // namespace
