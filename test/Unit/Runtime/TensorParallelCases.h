//===- TensorParallelCases.h - Tensor-parallel calls vs the whole -*- C++ -*-=//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The tensor-parallel entry points of a backend, run as the 2 ranks of a
// ThreadGroup, against the whole computation: sums and slices written out
// here, or the CPU backend's unsharded call (one rank, the whole vocabulary).
// The CPU backend runs them in TensorParallelThreadsTest.cpp, the CUDA
// backend in CudaTensorParallelTest.cpp (on a GPU), with the same cases.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TEST_UNIT_RUNTIME_TENSORPARALLELCASES_H
#define INFIR2_TEST_UNIT_RUNTIME_TENSORPARALLELCASES_H

#include "DescriptorBuilder.h"
#include "ThreadGroup.h"

#include "infir2/runtime/Backend.h"
#include "infir2/runtime/Error.h"
#include "infir2/runtime/Float.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <random>

namespace infir2::test::tp {

constexpr int kRanks = 2;

/// Where the ranks run: a backend, the relative tolerance of its sums
/// against the CPU backend's whole computation (0: the same bits), what a
/// test sets on the group's interfaces (device functions) before a call,
/// and whether each rank queues its call on a step stream of its own (a
/// trainer's way: asynchronous, refusals read at the synchronization).
struct GroupBackend {
  const infir2rt_backend *backend;
  double tolerance;
  std::function<void(ThreadGroup &)> wire = nullptr;
  bool stream = false;
};

inline std::mt19937_64 seeded() {
  uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", (unsigned long long)seed);
  return std::mt19937_64(seed);
}

/// Rank r's call of `calls` (`entry`, an INFIR2RT_ENTRY_ index) on every
/// rank at once, its results back in calls[r].host.
inline void runGroup(const GroupBackend &on, std::vector<Call> &calls,
                     int entry) {
  ThreadGroup group(kRanks);
  if (on.wire)
    on.wire(group);
  const infir2rt_backend *b = on.backend;
  group.run([&](int r) {
    Call &c = calls[r];
    int64_t bytes = int64_t(c.host.size());
    char why[256] = {0};
    void *mem = c.host.data();
    if (!b->host_memory) {
      ASSERT_EQ(b->allocate(&mem, bytes, why, sizeof why), 0) << why;
      ASSERT_EQ(b->upload(mem, c.host.data(), bytes, nullptr, why, sizeof why),
                0)
          << why;
    }
    infir2rt_context ctx{};
    ctx.regions[0] = ctx.regions[1] = static_cast<uint8_t *>(mem);
    ctx.tp_comm = &group.rank(r);
    ctx.backend = b;
    if (on.stream) {
      ASSERT_EQ(b->stream_create(&ctx.stream, why, sizeof why), 0) << why;
    }
    EXPECT_EQ(b->entries[entry](&ctx, c.desc.data(), "rank"), 0)
        << "rank " << r << ": " << infir2::rt::callError(ctx);
    if (on.stream) {
      EXPECT_EQ(b->synchronize(ctx.stream, why, sizeof why), 0) << why;
      b->stream_destroy(ctx.stream);
    }
    if (!b->host_memory) {
      EXPECT_EQ(
          b->download(c.host.data(), mem, bytes, nullptr, why, sizeof why), 0)
          << why;
      b->release(mem, bytes);
    }
  });
}

/// The whole computation: the CPU backend, one rank, no group.
inline void runWhole(Call &c, int entry) {
  infir2rt_context ctx{};
  ctx.regions[0] = ctx.regions[1] = c.host.data();
  ASSERT_EQ(
      infir2rt_cpu_backend()->entries[entry](&ctx, c.desc.data(), "whole"), 0)
      << infir2::rt::callError(ctx);
}

inline uint16_t *bf16(Call &c, int i) {
  return reinterpret_cast<uint16_t *>(c.u8(i));
}
inline int32_t *i32(Call &c, int i) {
  return reinterpret_cast<int32_t *>(c.u8(i));
}
/// A new operand that is operand `i` again (an output written in place).
inline int alias(Call &c, int i) {
  const int64_t w = INFIR2RT_OPERAND_WORDS;
  std::vector<int64_t> words(c.desc.begin() + 2 + i * w,
                             c.desc.begin() + 2 + (i + 1) * w);
  c.desc.insert(c.desc.begin() + 2 + c.desc[0] * w, words.begin(), words.end());
  ++c.desc[0];
  c.operands.push_back(c.operands[i]);
  return int(c.operands.size()) - 1;
}

inline float uniform(std::mt19937_64 &rng, float scale) {
  return scale * (float(rng() % 20001) / 10000.0f - 1.0f);
}

/// |got - want| <= tolerance * scale, where scale is the largest |want|.
inline void expectClose(const float *got, const float *want, int64_t n,
                        double tolerance, const char *what) {
  double scale = 0.0, worst = 0.0;
  for (int64_t i = 0; i < n; ++i)
    scale = std::max(scale, std::fabs(double(want[i])));
  for (int64_t i = 0; i < n; ++i)
    worst = std::max(worst, std::fabs(double(got[i]) - double(want[i])));
  EXPECT_LE(worst, tolerance * std::max(scale, 1e-30))
      << what << ": worst difference " << worst << " against " << scale;
}

/// tp_reduce: BF16 partials summed in FP32 and rounded once, into another
/// operand or in place.
inline void partialSums(const GroupBackend &on) {
  std::mt19937_64 rng = seeded();
  const int64_t n = 3 * 5 * 8;
  for (bool inPlace : {false, true}) {
    SCOPED_TRACE(inPlace ? "in place" : "into another operand");
    std::vector<Call> calls(kRanks);
    std::vector<float> sum(n, 0.0f);
    int out = 1;
    for (Call &c : calls) {
      int in = c.add({3, 5, 8}, INFIR2RT_BF16);
      out = inPlace ? alias(c, in) : c.add({3, 5, 8}, INFIR2RT_BF16);
      for (int64_t i = 0; i < n; ++i) {
        bf16(c, in)[i] = infir2::rt::floatToBF16(uniform(rng, 4.0f));
        sum[i] += infir2::rt::bf16ToFloat(bf16(c, in)[i]);
      }
    }
    runGroup(on, calls, INFIR2RT_ENTRY_tp_reduce);
    for (int r = 0; r < kRanks; ++r)
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(bf16(calls[r], out)[i], infir2::rt::floatToBF16(sum[i]))
            << "rank " << r << ", element " << i;
  }
}

/// tp_all_gather and tp_reduce_scatter along each dimension of [2, 6, 4]
/// (the sequence's is 1), the gather in FP32 and BF16: the slices in rank
/// order, exactly.
inline void sequenceSlices(const GroupBackend &on) {
  std::mt19937_64 rng = seeded();
  const std::vector<int64_t> shape = {2, 6, 4};
  const int64_t n = 2 * 6 * 4;
  for (int64_t dim = 0; dim < 3; ++dim)
    for (int64_t dtype : {INFIR2RT_F32, INFIR2RT_BF16}) {
      SCOPED_TRACE("dimension " + std::to_string(dim) +
                   (dtype == INFIR2RT_BF16 ? ", bf16" : ", f32"));
      std::vector<int64_t> part = shape;
      part[dim] /= kRanks;
      // Element i of rank r's slice, as an index of the whole tensor.
      auto wholeIndex = [&](int r, int64_t i) {
        int64_t c = i % part[2], b = (i / part[2]) % part[1],
                a = i / (part[2] * part[1]);
        int64_t idx[3] = {a, b, c};
        idx[dim] += r * part[dim];
        return (idx[0] * shape[1] + idx[1]) * shape[2] + idx[2];
      };
      std::vector<uint16_t> whole(n);
      std::vector<float> sum(n, 0.0f);
      for (uint16_t &x : whole)
        x = infir2::rt::floatToBF16(uniform(rng, 2.0f));
      std::vector<Call> gather(kRanks), scatter(kRanks);
      for (int r = 0; r < kRanks; ++r) {
        Call &g = gather[r];
        g.add(part, dtype);
        g.add(shape, dtype);
        g.attrs({double(dim)});
        for (int64_t i = 0; i < n / kRanks; ++i) {
          uint16_t x = whole[wholeIndex(r, i)];
          if (dtype == INFIR2RT_BF16)
            bf16(g, 0)[i] = x;
          else
            g.f32(0)[i] = infir2::rt::bf16ToFloat(x);
        }
        Call &c = scatter[r];
        c.add(shape, INFIR2RT_BF16);
        c.add(part, INFIR2RT_BF16);
        c.attrs({double(dim)});
        for (int64_t i = 0; i < n; ++i) {
          bf16(c, 0)[i] = infir2::rt::floatToBF16(uniform(rng, 2.0f));
          sum[i] += infir2::rt::bf16ToFloat(bf16(c, 0)[i]);
        }
      }
      runGroup(on, gather, INFIR2RT_ENTRY_tp_all_gather);
      runGroup(on, scatter, INFIR2RT_ENTRY_tp_reduce_scatter);
      for (int r = 0; r < kRanks; ++r) {
        for (int64_t i = 0; i < n; ++i) {
          float got = dtype == INFIR2RT_BF16
                          ? infir2::rt::bf16ToFloat(bf16(gather[r], 1)[i])
                          : gather[r].f32(1)[i];
          ASSERT_EQ(got, infir2::rt::bf16ToFloat(whole[i]))
              << "gather, rank " << r << ", element " << i;
        }
        for (int64_t i = 0; i < n / kRanks; ++i)
          ASSERT_EQ(bf16(scatter[r], 1)[i],
                    infir2::rt::floatToBF16(sum[wholeIndex(r, i)]))
              << "reduce-scatter, rank " << r << ", element " << i;
      }
    }
}

/// The loss and its gradient over a vocabulary of 2 x V ids split by
/// columns, against the CPU backend's over the whole logits: the loss on
/// every rank, and each rank's columns of the gradient. Logits of `dtype`;
/// with `divisor`, the chunked loss's form (a given divisor in place of the
/// tokens' weights).
inline void vocabularyParallelLoss(const GroupBackend &on, int64_t V,
                                   int64_t dtype, bool divisor) {
  SCOPED_TRACE("2 x " + std::to_string(V) + " ids" +
               (dtype == INFIR2RT_BF16 ? ", bf16 logits" : ", f32 logits") +
               (divisor ? ", a divisor" : ""));
  std::mt19937_64 rng = seeded();
  const int64_t T = 24, W = V * kRanks;
  // Operands: logits, targets, mask, [loss_grad], [divisor], out.
  auto build = [&](Call &c, int64_t cols, bool gradient, int64_t shards) {
    c.add({T, cols}, dtype);
    c.add({T}, INFIR2RT_I32);
    c.add({T}, INFIR2RT_F32);
    if (gradient)
      c.add({}, INFIR2RT_F32);
    if (divisor)
      c.add({}, INFIR2RT_F32);
    int out =
        c.add(gradient ? std::vector<int64_t>{T, cols} : std::vector<int64_t>{},
              INFIR2RT_F32);
    c.attrs({-100, 1, divisor ? 1.0 : 0.0, double(shards)});
    if (gradient)
      c.f32(3)[0] = 0.75f;
    if (divisor)
      c.f32(gradient ? 4 : 3)[0] = 37.5f;
    return out;
  };
  Call whole, wholeGrad;
  int lossOut = build(whole, W, false, 1),
      gradOut = build(wholeGrad, W, true, 1);
  int64_t esize = infir2rt_dtype_size(dtype);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < W; ++i) {
      float x = uniform(rng, 6.0f);
      if (dtype == INFIR2RT_BF16)
        bf16(whole, 0)[t * W + i] = infir2::rt::floatToBF16(x);
      else
        whole.f32(0)[t * W + i] = x;
    }
    i32(whole, 1)[t] = t % 7 == 3 ? -100 : int32_t(rng() % W);
    whole.f32(2)[t] = t % 5 == 1 ? 0.0f : 0.5f + float(t % 3);
  }
  for (int op = 0; op < 3; ++op)
    std::memcpy(wholeGrad.u8(op), whole.u8(op), whole.operands[op].second);
  std::vector<Call> loss(kRanks), grad(kRanks);
  for (int r = 0; r < kRanks; ++r)
    for (Call *c : {&loss[r], &grad[r]}) {
      build(*c, V, c == &grad[r], kRanks);
      for (int64_t t = 0; t < T; ++t)
        std::memcpy(c->u8(0) + t * V * esize,
                    whole.u8(0) + (t * W + r * V) * esize, V * esize);
      std::memcpy(c->u8(1), whole.u8(1), T * 4);
      std::memcpy(c->u8(2), whole.u8(2), T * 4);
    }
  runWhole(whole, INFIR2RT_ENTRY_cross_entropy);
  runWhole(wholeGrad, INFIR2RT_ENTRY_cross_entropy_grad);
  runGroup(on, loss, INFIR2RT_ENTRY_cross_entropy);
  runGroup(on, grad, INFIR2RT_ENTRY_cross_entropy_grad);
  // The whole loss takes each row's log-sum-exp in FP32, the split one
  // combines the ranks' parts in FP64: a few FP32 ulps of the loss apart.
  double tolerance = std::max(on.tolerance, 1e-6);
  for (int r = 0; r < kRanks; ++r) {
    expectClose(loss[r].f32(lossOut), whole.f32(lossOut), 1, tolerance, "loss");
    std::vector<float> mine(T * V);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < V; ++i)
        mine[t * V + i] = wholeGrad.f32(gradOut)[t * W + r * V + i];
    expectClose(grad[r].f32(gradOut), mine.data(), T * V, tolerance,
                "the logits' gradient");
  }
}

inline void vocabularyParallelLoss(const GroupBackend &on) {
  // 37 columns a rank: element by element; 256 (a multiple of 4, one per
  // thread of a GPU block): 16-byte loads where the logits are FP32.
  vocabularyParallelLoss(on, 37, INFIR2RT_F32, false);
  vocabularyParallelLoss(on, 256, INFIR2RT_F32, true);
  vocabularyParallelLoss(on, 300, INFIR2RT_BF16, false);
}

/// The embedding and its gradient over 2 x 5 rows: other ranks' ids give
/// zero rows (the group's sum is the whole lookup, exactly), and each
/// rank's gradient rows are the whole gradient's.
inline void vocabularyParallelEmbedding(const GroupBackend &on) {
  std::mt19937_64 rng = seeded();
  const int64_t T = 12, V = 5, W = V * kRanks, D = 6;
  Call whole, wholeGrad;
  whole.add({W, D}, INFIR2RT_F32);
  whole.add({T}, INFIR2RT_I32);
  whole.add({T, D}, INFIR2RT_F32);
  whole.attrs({1});
  wholeGrad.add({T}, INFIR2RT_I32);
  wholeGrad.add({T, D}, INFIR2RT_F32);
  wholeGrad.add({W, D}, INFIR2RT_F32);
  wholeGrad.attrs({0, 1});
  for (int64_t i = 0; i < W * D; ++i)
    whole.f32(0)[i] = uniform(rng, 1.0f);
  for (int64_t t = 0; t < T; ++t)
    i32(whole, 1)[t] = i32(wholeGrad, 0)[t] = int32_t(rng() % W);
  for (int64_t i = 0; i < T * D; ++i)
    wholeGrad.f32(1)[i] = uniform(rng, 1.0f);
  std::vector<Call> lookup(kRanks), grad(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    lookup[r].add({V, D}, INFIR2RT_F32);
    lookup[r].add({T}, INFIR2RT_I32);
    lookup[r].add({T, D}, INFIR2RT_F32);
    lookup[r].attrs({double(kRanks)});
    std::memcpy(lookup[r].f32(0), whole.f32(0) + r * V * D, V * D * 4);
    std::memcpy(lookup[r].u8(1), whole.u8(1), T * 4);
    grad[r].add({T}, INFIR2RT_I32);
    grad[r].add({T, D}, INFIR2RT_F32);
    grad[r].add({V, D}, INFIR2RT_F32);
    grad[r].attrs({0, double(kRanks)});
    std::memcpy(grad[r].u8(0), wholeGrad.u8(0), T * 4);
    std::memcpy(grad[r].u8(1), wholeGrad.u8(1), T * D * 4);
  }
  runWhole(whole, INFIR2RT_ENTRY_embedding);
  runWhole(wholeGrad, INFIR2RT_ENTRY_embedding_grad);
  runGroup(on, lookup, INFIR2RT_ENTRY_embedding);
  runGroup(on, grad, INFIR2RT_ENTRY_embedding_grad);
  for (int64_t i = 0; i < T * D; ++i) {
    float sum = 0.0f;
    for (int r = 0; r < kRanks; ++r)
      sum += lookup[r].f32(2)[i];
    ASSERT_EQ(sum, whole.f32(2)[i]) << "element " << i;
  }
  for (int r = 0; r < kRanks; ++r)
    expectClose(grad[r].f32(2), wholeGrad.f32(2) + r * V * D, V * D,
                on.tolerance, "the table's gradient");
}

/// The gradient norm with the first two gradients shards on each rank (7
/// and 300 values: one and two blocks of partial sums on a GPU): their
/// squares over the group, then the two replicated gradients', scaled.
inline void shardedGradientNorm(const GroupBackend &on) {
  std::mt19937_64 rng = seeded();
  const std::vector<int64_t> sizes = {7, 300, 5, 260};
  std::vector<std::vector<float>> replicated(2);
  for (int g = 0; g < 2; ++g)
    for (int64_t i = 0; i < sizes[2 + g]; ++i)
      replicated[g].push_back(uniform(rng, 3.0f));
  std::vector<Call> calls(kRanks);
  double ss = 0.0;
  for (Call &c : calls) {
    for (int64_t n : sizes)
      c.add({n}, INFIR2RT_F32);
    int scale = c.add({}, INFIR2RT_F32);
    c.add({}, INFIR2RT_F32);
    c.attrs({0, 2});
    c.f32(scale)[0] = 0.5f;
    for (int g = 0; g < 2; ++g)
      for (int64_t i = 0; i < sizes[g]; ++i) {
        c.f32(g)[i] = uniform(rng, 3.0f);
        ss += std::pow(0.5 * c.f32(g)[i], 2);
      }
    for (int g = 0; g < 2; ++g)
      std::memcpy(c.f32(2 + g), replicated[g].data(), sizes[2 + g] * 4);
  }
  for (const std::vector<float> &g : replicated)
    for (float x : g)
      ss += std::pow(0.5 * x, 2);
  runGroup(on, calls, INFIR2RT_ENTRY_global_norm);
  // The shards' sum crosses the group in FP32: within an FP32 ulp or two.
  float want = float(std::sqrt(ss));
  for (int r = 0; r < kRanks; ++r)
    expectClose(calls[r].f32(5), &want, 1, std::max(on.tolerance, 4e-7),
                "the norm");
}

} // namespace infir2::test::tp

#endif // INFIR2_TEST_UNIT_RUNTIME_TENSORPARALLELCASES_H
