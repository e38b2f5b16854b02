//===- OptimizerGroupTest.cpp - One AdamW call for many tensors -----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CPU backend's adamw_group against what it replaces: one adamw call per
// tensor, each followed by the copy entry that narrows the updated master to
// its BF16 working copy. Every result must be the same to the bit (the same
// per-element rule, the same rounding), out of place and in place, for
// tensors of 1 element, of odd sizes, and above the size from which adamw
// splits its loop among threads. Malformed calls are refused with a message.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Error.h"
#include "infir2/runtime/Float.h"

#include "DescriptorBuilder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using infir2::rt::callError;
using infir2::test::Call;

namespace {

const std::vector<int64_t> kSizes = {1, 7, 896, 20011, 3 * 5};
const std::vector<double> kDecays = {0.1, 0.0, 0.1, 0.05, 0.0};
// Tensors 0, 2 and 3 have BF16 working copies; 1 and 4 none.
const std::vector<int64_t> kWorking = {0, 2, 3};

struct Values {
  std::vector<std::vector<float>> p, g, m, v;
};

Values draw(std::mt19937_64 &rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Values x;
  for (int64_t n : kSizes) {
    std::vector<float> p(n), g(n), m(n), v(n);
    for (int64_t i = 0; i < n; ++i) {
      p[i] = 0.02f * normal(rng);
      g[i] = normal(rng);
      m[i] = 0.1f * normal(rng);
      v[i] = std::fabs(0.01f * normal(rng));
    }
    x.p.push_back(p), x.g.push_back(g), x.m.push_back(m), x.v.push_back(v);
  }
  return x;
}

void put(Call &c, int operand, const std::vector<float> &values) {
  std::memcpy(c.f32(operand), values.data(), values.size() * 4);
}

void scalars(Call &c, int first) {
  for (auto [i, value] : {std::pair{0, 3e-3f}, {1, 5.0f}, {2, 0.5f}, {3, 2.5f}})
    *c.f32(first + i) = value;
}

/// Results of one tensor: new master, moments and (if any) working copy.
struct Result {
  std::vector<float> p, m, v;
  std::vector<uint16_t> w;
};

std::vector<Result> perTensor(const Values &x) {
  std::vector<Result> out;
  for (size_t t = 0; t < kSizes.size(); ++t) {
    int64_t n = kSizes[t];
    Call c;
    int p = c.add({n}, INFIR2RT_F32);
    int g = c.add({n}, INFIR2RT_F32), m = c.add({n}, INFIR2RT_F32),
        v = c.add({n}, INFIR2RT_F32);
    int s = c.add({}, INFIR2RT_F32);
    for (int i = 0; i < 3; ++i)
      c.add({}, INFIR2RT_F32);
    int np = c.add({n}, INFIR2RT_F32), nm = c.add({n}, INFIR2RT_F32),
        nv = c.add({n}, INFIR2RT_F32);
    c.attrs({0.9, 0.95, 1e-8, kDecays[t], 1.0});
    put(c, p, x.p[t]), put(c, g, x.g[t]), put(c, m, x.m[t]), put(c, v, x.v[t]);
    scalars(c, s);
    EXPECT_EQ(c.run(infir2rt_adamw), 0);
    Result r;
    r.p.assign(c.f32(np), c.f32(np) + n);
    r.m.assign(c.f32(nm), c.f32(nm) + n);
    r.v.assign(c.f32(nv), c.f32(nv) + n);
    bool working = false;
    for (int64_t k : kWorking)
      working |= k == int64_t(t);
    if (working) {
      Call copy;
      int in = copy.add({n}, INFIR2RT_F32), outW = copy.add({n}, INFIR2RT_BF16);
      put(copy, in, r.p);
      EXPECT_EQ(copy.run(infir2rt_copy), 0);
      const auto *w = reinterpret_cast<const uint16_t *>(copy.u8(outW));
      r.w.assign(w, w + n);
    }
    out.push_back(std::move(r));
  }
  return out;
}

/// The group call; with `inPlace` each new master and moment is the old
/// one's buffer, as the memory planner lays them out.
std::vector<Result> grouped(const Values &x, bool inPlace) {
  Call c;
  int64_t n = kSizes.size();
  std::vector<int> ops[4];
  for (int k = 0; k < 4; ++k)
    for (int64_t size : kSizes)
      ops[k].push_back(c.add({size}, INFIR2RT_F32));
  int s = c.add({}, INFIR2RT_F32);
  for (int i = 0; i < 3; ++i)
    c.add({}, INFIR2RT_F32);
  std::vector<int> out[3], working;
  for (int k = 0; k < 3; ++k)
    for (size_t t = 0; t < kSizes.size(); ++t)
      out[k].push_back(inPlace ? -1 : c.add({kSizes[t]}, INFIR2RT_F32));
  for (int64_t t : kWorking)
    working.push_back(c.add({kSizes[t]}, INFIR2RT_BF16));
  for (size_t t = 0; t < kSizes.size(); ++t) {
    put(c, ops[0][t], x.p[t]), put(c, ops[1][t], x.g[t]);
    put(c, ops[2][t], x.m[t]), put(c, ops[3][t], x.v[t]);
  }
  scalars(c, s);
  if (inPlace) {
    // Point the results' descriptors at the masters' and moments' bytes:
    // the same operands again, appended after the scalars.
    Call aliased;
    aliased.host = c.host;
    aliased.operands = c.operands;
    std::vector<int64_t> words(c.desc.begin() + 2,
                               c.desc.begin() + 2 +
                                   c.desc[0] * INFIR2RT_OPERAND_WORDS);
    auto operandWords = [&](int i) {
      return std::vector<int64_t>(words.begin() + i * INFIR2RT_OPERAND_WORDS,
                                  words.begin() +
                                      (i + 1) * INFIR2RT_OPERAND_WORDS);
    };
    std::vector<int64_t> desc = {0, 0};
    auto append = [&](int i) {
      std::vector<int64_t> w = operandWords(i);
      desc.insert(desc.end(), w.begin(), w.end());
      ++desc[0];
    };
    for (int i = 0; i < 4 * n + 4; ++i)
      append(i);
    for (int k : {0, 2, 3})
      for (int64_t t = 0; t < n; ++t)
        append(ops[k][t]);
    for (int w : working)
      append(w);
    aliased.desc = desc;
    c = aliased;
    for (int k = 0; k < 3; ++k)
      out[k] = ops[k == 0 ? 0 : k + 1];
  }
  std::vector<double> attrs = {0.9, 0.95, 1e-8, 1.0, double(n)};
  attrs.insert(attrs.end(), kDecays.begin(), kDecays.end());
  attrs.push_back(double(kWorking.size()));
  for (int64_t t : kWorking)
    attrs.push_back(double(t));
  c.attrs(attrs);
  EXPECT_EQ(c.run(infir2rt_adamw_group), 0);
  std::vector<Result> results(kSizes.size());
  for (size_t t = 0; t < kSizes.size(); ++t) {
    int64_t size = kSizes[t];
    results[t].p.assign(c.f32(out[0][t]), c.f32(out[0][t]) + size);
    results[t].m.assign(c.f32(out[1][t]), c.f32(out[1][t]) + size);
    results[t].v.assign(c.f32(out[2][t]), c.f32(out[2][t]) + size);
  }
  for (size_t k = 0; k < kWorking.size(); ++k) {
    const auto *w = reinterpret_cast<const uint16_t *>(c.u8(working[k]));
    results[kWorking[k]].w.assign(w, w + kSizes[kWorking[k]]);
  }
  return results;
}

TEST(AdamWGroup, EqualsOneAdamWAndOneCopyPerTensor) {
  uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);
  Values x = draw(rng);
  std::vector<Result> expected = perTensor(x);
  for (bool inPlace : {false, true}) {
    SCOPED_TRACE(inPlace ? "in place" : "out of place");
    std::vector<Result> got = grouped(x, inPlace);
    for (size_t t = 0; t < kSizes.size(); ++t) {
      SCOPED_TRACE("tensor " + std::to_string(t));
      // Bit for bit: memcmp, so that a NaN or a signed zero counts too.
      auto same = [](const auto &a, const auto &b) {
        return a.size() == b.size() &&
               (a.empty() || std::memcmp(a.data(), b.data(),
                                         a.size() * sizeof(a[0])) == 0);
      };
      EXPECT_TRUE(same(got[t].p, expected[t].p));
      EXPECT_TRUE(same(got[t].m, expected[t].m));
      EXPECT_TRUE(same(got[t].v, expected[t].v));
      EXPECT_TRUE(same(got[t].w, expected[t].w));
      EXPECT_EQ(got[t].w.empty(), expected[t].w.empty());
    }
  }
}

/// One AdamW update (adamw, or adamw_group of one tensor with a BF16 working
/// copy) of n elements with moments of type `moments`, from `x`'s tensor t
/// (its moments rounded to BF16 first, so that both types start from the
/// same values): the new master, moments (as FP32) and working copy.
Result updateWithMoments(const Values &x, size_t t, int64_t moments,
                         bool group) {
  int64_t n = kSizes[t];
  Call c;
  int p = c.add({n}, INFIR2RT_F32), g = c.add({n}, INFIR2RT_F32),
      m = c.add({n}, moments), v = c.add({n}, moments);
  int s = c.add({}, INFIR2RT_F32);
  for (int i = 0; i < 3; ++i)
    c.add({}, INFIR2RT_F32);
  int np = c.add({n}, INFIR2RT_F32), nm = c.add({n}, moments),
      nv = c.add({n}, moments);
  int w = group ? c.add({n}, INFIR2RT_BF16) : -1;
  if (group)
    c.attrs({0.9, 0.95, 1e-8, 1.0, 1.0, kDecays[t], 1.0, 0.0});
  else
    c.attrs({0.9, 0.95, 1e-8, kDecays[t], 1.0});
  put(c, p, x.p[t]), put(c, g, x.g[t]);
  for (auto [o, values] : {std::pair{m, &x.m[t]}, {v, &x.v[t]}})
    for (int64_t i = 0; i < n; ++i) {
      uint16_t b = infir2::rt::floatToBF16((*values)[i]);
      if (moments == INFIR2RT_BF16)
        reinterpret_cast<uint16_t *>(c.u8(o))[i] = b;
      else
        c.f32(o)[i] = infir2::rt::bf16ToFloat(b);
    }
  scalars(c, s);
  EXPECT_EQ(c.run(group ? infir2rt_adamw_group : infir2rt_adamw), 0);
  Result r;
  r.p.assign(c.f32(np), c.f32(np) + n);
  for (auto [o, out] : {std::pair{nm, &r.m}, {nv, &r.v}})
    for (int64_t i = 0; i < n; ++i)
      out->push_back(moments == INFIR2RT_BF16
                         ? infir2::rt::bf16ToFloat(
                               reinterpret_cast<uint16_t *>(c.u8(o))[i])
                         : c.f32(o)[i]);
  if (group) {
    const auto *wb = reinterpret_cast<const uint16_t *>(c.u8(w));
    r.w.assign(wb, wb + n);
  }
  return r;
}

// optimizer-state=bf16's contract, to the bit: from the same moments, the
// update with BF16 moments gives the FP32-moment update's master (the
// arithmetic is FP32 either way) and its new moments rounded to nearest
// even, for adamw and adamw_group alike.
TEST(AdamWGroup, BF16MomentsAreTheFP32UpdateRounded) {
  uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);
  Values x = draw(rng);
  for (bool group : {false, true})
    for (size_t t : {size_t(1), size_t(3)}) { // 7 elements, and 20011
      SCOPED_TRACE(std::string(group ? "adamw_group" : "adamw") + ", tensor " +
                   std::to_string(t));
      Result fp32 = updateWithMoments(x, t, INFIR2RT_F32, group);
      Result bf16 = updateWithMoments(x, t, INFIR2RT_BF16, group);
      EXPECT_EQ(std::memcmp(fp32.p.data(), bf16.p.data(), fp32.p.size() * 4),
                0);
      EXPECT_EQ(fp32.w, bf16.w);
      size_t rounded = 0;
      for (size_t i = 0; i < fp32.m.size(); ++i) {
        for (auto [wide, narrow] :
             {std::pair{fp32.m[i], bf16.m[i]}, {fp32.v[i], bf16.v[i]}}) {
          float want = infir2::rt::bf16ToFloat(infir2::rt::floatToBF16(wide));
          ASSERT_EQ(std::memcmp(&want, &narrow, 4), 0)
              << "element " << i << ": " << wide << " stored as " << narrow;
          rounded += want != wide;
        }
      }
      EXPECT_GT(rounded, 0u); // the rounding happened
    }
}

// Moments of another type, or of two types, are refused.
TEST(AdamWGroup, RefusesMomentsNeitherF32NorBF16) {
  for (auto [m, v] :
       {std::pair{INFIR2RT_F16, INFIR2RT_F16}, {INFIR2RT_BF16, INFIR2RT_F32}}) {
    Call c;
    c.add({4}, INFIR2RT_F32), c.add({4}, INFIR2RT_F32);
    c.add({4}, m), c.add({4}, v);
    int s = c.add({}, INFIR2RT_F32);
    for (int i = 0; i < 3; ++i)
      c.add({}, INFIR2RT_F32);
    c.add({4}, INFIR2RT_F32), c.add({4}, m), c.add({4}, v);
    c.attrs({0.9, 0.95, 1e-8, 0.1, 1.0});
    scalars(c, s);
    infir2rt_context ctx{};
    ctx.regions[0] = ctx.regions[1] = c.host.data();
    EXPECT_NE(infir2rt_adamw(&ctx, c.desc.data(), "adamw"), 0);
    EXPECT_EQ(callError(ctx),
              "adamw: the moments must be f32 or bf16, all alike");
    // The same tensor as a group of one, no working copy.
    Call g;
    g.add({4}, INFIR2RT_F32), g.add({4}, INFIR2RT_F32);
    g.add({4}, m), g.add({4}, v);
    int gs = g.add({}, INFIR2RT_F32);
    for (int i = 0; i < 3; ++i)
      g.add({}, INFIR2RT_F32);
    g.add({4}, INFIR2RT_F32), g.add({4}, m), g.add({4}, v);
    g.attrs({0.9, 0.95, 1e-8, 1.0, 1.0, 0.1, 0.0});
    scalars(g, gs);
    infir2rt_context gctx{};
    gctx.regions[0] = gctx.regions[1] = g.host.data();
    EXPECT_NE(infir2rt_adamw_group(&gctx, g.desc.data(), "group"), 0);
    EXPECT_EQ(callError(gctx),
              "group: the moments must be f32 or bf16, all alike");
  }
}

// A call whose attributes do not describe its operands (a corrupt model
// object), a working copy of a tensor that is not there, and a step below 1
// are refused, each with what is wrong.
TEST(AdamWGroup, RefusesMalformedCalls) {
  auto call = [](double n, double k, double index, float step) {
    Call c;
    for (int i = 0; i < 4; ++i)
      c.add({4}, INFIR2RT_F32);
    int s = c.add({}, INFIR2RT_F32);
    for (int i = 0; i < 3; ++i)
      c.add({}, INFIR2RT_F32);
    for (int i = 0; i < 3; ++i)
      c.add({4}, INFIR2RT_F32);
    c.add({4}, INFIR2RT_BF16);
    *c.f32(s) = 1e-3f;
    *c.f32(s + 1) = step;
    *c.f32(s + 2) = 1.0f;
    *c.f32(s + 3) = 1.0f;
    c.attrs({0.9, 0.95, 1e-8, 1.0, n, 0.1, k, index});
    infir2rt_context ctx{};
    ctx.regions[0] = ctx.regions[1] = c.host.data();
    int32_t rc = infir2rt_adamw_group(&ctx, c.desc.data(), "group");
    EXPECT_NE(rc, 0);
    return callError(ctx);
  };
  // (The dispatcher refuses what ABI.def's signature does not allow before
  // the backend sees it: 2 tensors and 0 working copies take 18 operands.)
  EXPECT_EQ(call(2, 1, 0, 1.0f),
            "group: the call does not match its entry point: adamw_group "
            "takes 18 operands (ABI.def), got 12");
  EXPECT_EQ(call(1, 1, 3, 1.0f),
            "group: working copy #0 names parameter #3, but the call updates "
            "1 tensors");
  EXPECT_EQ(call(1, 1, 0, 0.0f), "group: step must be at least 1, got 0");
}

} // namespace
