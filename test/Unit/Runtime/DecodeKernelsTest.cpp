//===- DecodeKernelsTest.cpp - cache_write and cache_attention ------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CPU backend's decode-step kernels against its causal attention: a
// sequence decoded one token at a time (cache_write of each token's key and
// value at its position, then cache_attention of its query) must give,
// row for row, what causal attention over the whole sequence gives. Both
// compute in FP32, in different orders (attention through per-head SGEMMs,
// cache_attention one query at a time), so the rows agree to FP32 rounding:
// each output is a convex combination of V's entries (|v| < 6 here), whose
// weights come from dot products of kHd terms; 2e-5 absolute bounds the
// summation errors (kHd·2^-24·Σ|q·k| < 1e-5 for these N(0, 1) inputs),
// while a wrong position or mask moves an output by O(0.1). Inputs are
// N(0, 1) from a fixed, printed seed. Out-of-range positions are refused by
// name.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/ABI.h"

#include "DescriptorBuilder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

using infir2::test::Call;

namespace {

constexpr int64_t kSeq = 12, kLen = 16, kHeads = 4, kKvHeads = 2, kHd = 8;
constexpr int64_t kQw = kHeads * kHd, kKw = kKvHeads * kHd;

TEST(DecodeKernels, TokenByTokenEqualsCausalAttention) {
  // A fixed seed, so that a failure reproduces; named in any failure.
  const uint64_t seed = 20250611;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::printf("seed %llu\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> q(kSeq * kQw), k(kSeq * kKw), v(kSeq * kKw);
  for (auto *t : {&q, &k, &v})
    for (float &x : *t)
      x = normal(rng);
  double scale = 1.0 / std::sqrt(double(kHd));

  Call full;
  int fq = full.add({1, kSeq, kQw}, INFIR2RT_F32),
      fk = full.add({1, kSeq, kKw}, INFIR2RT_F32),
      fv = full.add({1, kSeq, kKw}, INFIR2RT_F32),
      fo = full.add({1, kSeq, kQw}, INFIR2RT_F32);
  full.attrs({kHeads, kKvHeads, kHd, scale, 1.0, 0.0});
  std::memcpy(full.f32(fq), q.data(), q.size() * 4);
  std::memcpy(full.f32(fk), k.data(), k.size() * 4);
  std::memcpy(full.f32(fv), v.data(), v.size() * 4);
  ASSERT_EQ(full.run(infir2rt_attention), 0);

  // The caches carry over from token to token (garbage past the position,
  // which no query may see).
  std::vector<float> kc(kLen * kKw, 1e30f), vc(kLen * kKw, -1e30f);
  for (int64_t s = 0; s < kSeq; ++s) {
    for (auto [cache, rows] : {std::pair{&kc, &k}, {&vc, &v}}) {
      Call w;
      int u = w.add({1, 1, kKw}, INFIR2RT_F32),
          c = w.add({1, kLen, kKw}, INFIR2RT_F32),
          p = w.add({1, 1}, INFIR2RT_I32),
          o = w.add({1, kLen, kKw}, INFIR2RT_F32);
      std::memcpy(w.f32(u), rows->data() + s * kKw, kKw * 4);
      std::memcpy(w.f32(c), cache->data(), cache->size() * 4);
      *reinterpret_cast<int32_t *>(w.u8(p)) = int32_t(s);
      ASSERT_EQ(w.run(infir2rt_cache_write), 0);
      std::memcpy(cache->data(), w.f32(o), cache->size() * 4);
    }
    Call a;
    int aq = a.add({1, 1, kQw}, INFIR2RT_F32),
        ak = a.add({1, kLen, kKw}, INFIR2RT_F32),
        av = a.add({1, kLen, kKw}, INFIR2RT_F32),
        ap = a.add({1, 1}, INFIR2RT_I32), ao = a.add({1, 1, kQw}, INFIR2RT_F32);
    a.attrs({kHeads, kKvHeads, kHd, scale});
    std::memcpy(a.f32(aq), q.data() + s * kQw, kQw * 4);
    std::memcpy(a.f32(ak), kc.data(), kc.size() * 4);
    std::memcpy(a.f32(av), vc.data(), vc.size() * 4);
    *reinterpret_cast<int32_t *>(a.u8(ap)) = int32_t(s);
    ASSERT_EQ(a.run(infir2rt_cache_attention), 0);
    for (int64_t i = 0; i < kQw; ++i)
      ASSERT_NEAR(a.f32(ao)[i], full.f32(fo)[s * kQw + i], 2e-5)
          << "token " << s << ", element " << i;
  }
}

TEST(DecodeKernels, PositionsOutsideTheCacheAreRefused) {
  for (int32_t bad : {int32_t(kLen), -1}) {
    Call w;
    w.add({1, 1, kKw}, INFIR2RT_F32);
    w.add({1, kLen, kKw}, INFIR2RT_F32);
    int p = w.add({1, 1}, INFIR2RT_I32);
    w.add({1, kLen, kKw}, INFIR2RT_F32);
    *reinterpret_cast<int32_t *>(w.u8(p)) = bad;
    EXPECT_NE(w.run(infir2rt_cache_write), 0) << bad;

    Call a;
    a.add({1, 1, kQw}, INFIR2RT_F32);
    a.add({1, kLen, kKw}, INFIR2RT_F32);
    a.add({1, kLen, kKw}, INFIR2RT_F32);
    int ap = a.add({1, 1}, INFIR2RT_I32);
    a.add({1, 1, kQw}, INFIR2RT_F32);
    a.attrs({kHeads, kKvHeads, kHd, 0.25});
    *reinterpret_cast<int32_t *>(a.u8(ap)) = bad;
    EXPECT_NE(a.run(infir2rt_cache_attention), 0) << bad;
  }
}

} // namespace
