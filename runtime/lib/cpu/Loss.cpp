//===- Loss.cpp - Cross-entropy on the CPU --------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// cross_entropy and its gradient, with the loss mask and the ignore index:
// targets checked, the log-sum-exp and the sum over tokens in FP64; and
// loss_weight, the divisor of a loss computed a chunk of tokens at a time;
// with the vocabulary split over tensor-parallel ranks, each token's
// log-sum-exp and target logit combined over the group (one gather).
// Logits are read, and gradients written, a row at a time: no FP32 copy of a
// large vocabulary's logits.
//
//===----------------------------------------------------------------------===//

#include "Operand.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace infir2::rt::cpu {

namespace {

/// Per-token loss weight (mask, 0 for the ignore index) of a cross-entropy.
struct TokenWeights {
  std::vector<float> w;
  double total = 0.0;
};

/// The weights of `targets` (operand `targetsAt`), whose mask (when there
/// is one) is the operand after them; a counted target outside [0, vocab)
/// is refused unless `vocab` is negative (the weights alone: the chunks'
/// losses check their targets).
int32_t tokenWeights(const Call &c, int64_t targetsAt, int64_t ignore,
                     bool hasMask, int64_t vocab, TokenWeights &out) {
  Operand targets = c.operand(targetsAt);
  Operand mask = hasMask ? c.operand(targetsAt + 1) : Operand{};
  out.w.resize(targets.numel);
  for (int64_t t = 0; t < targets.numel; ++t) {
    int64_t id = targets.getIndex(t);
    float w = id == ignore ? 0.0f : (hasMask ? mask.get(t) : 1.0f);
    if (vocab >= 0 && w != 0.0f && (id < 0 || id >= vocab))
      return c.fail("target %lld at position %lld is out of range [0, %lld)",
                    (long long)id, (long long)t, (long long)vocab);
    out.w[t] = w;
    out.total += w;
  }
  return 0;
}

float logSumExp(const float *row, int64_t n) {
  float mx = *std::max_element(row, row + n);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += std::exp(double(row[i] - mx));
  return mx + float(std::log(sum));
}

/// Row t (n wide) of `x` as FP32: the storage itself when it is FP32, else
/// widened into `buf`. A row at a time, so that BF16 logits of a large
/// vocabulary need no FP32 copy of the whole tensor.
const float *rowOf(const Operand &x, int64_t t, int64_t n, Buffer &buf) {
  if (x.dtype == INFIR2RT_F32)
    return reinterpret_cast<const float *>(x.ptr) + t * n;
  float *out = buf.resize(n);
  if (x.dtype == INFIR2RT_BF16) {
    const uint16_t *in = reinterpret_cast<const uint16_t *>(x.ptr) + t * n;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      out[i] = bf16ToFloat(in[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      out[i] = x.get(t * n + i);
  }
  return out;
}

/// The divisor of a loss computed a chunk at a time (operand `at`) in place
/// of the chunk's own weights.
void useDivisor(const Call &c, bool hasDivisor, int64_t at, TokenWeights &w) {
  if (hasDivisor)
    w.total = c.operand(at).get(0);
}

/// Each counted token's log-sum-exp over the whole vocabulary and its
/// target's logit, where the logits are this rank's columns of a vocabulary
/// split over `shards` tensor-parallel ranks (from column `first` on): each
/// rank's (maximum, sum of exp(x - maximum), target logit or 0) per token,
/// gathered over the group and combined in rank order, in FP64.
int32_t overVocabulary(const Call &c, const Operand &logits,
                       const Operand &targets, const TokenWeights &w,
                       int64_t shards, int64_t first, std::vector<double> &lse,
                       std::vector<double> &target) {
  int64_t vocab = logits.last(), n = targets.numel;
  std::vector<double> mine(size_t(3 * n), 0.0), all(size_t(3 * n * shards));
#pragma omp parallel
  {
    Buffer rowBuffer;
#pragma omp for
    for (int64_t t = 0; t < n; ++t) {
      if (w.w[t] == 0.0f)
        continue;
      const float *row = rowOf(logits, t, vocab, rowBuffer);
      float mx = *std::max_element(row, row + vocab);
      double sum = 0.0;
      for (int64_t i = 0; i < vocab; ++i)
        sum += std::exp(double(row[i] - mx));
      int64_t id = targets.getIndex(t) - first;
      mine[3 * t] = mx;
      mine[3 * t + 1] = sum;
      mine[3 * t + 2] = id >= 0 && id < vocab ? double(row[id]) : 0.0;
    }
  }
  char error[256] = {0};
  const infir2rt_communicator *tp = c.ctx->tp_comm;
  if (tp->all_gather(tp->impl, mine.data(), all.data(),
                     int64_t(mine.size() * sizeof(double)), error,
                     sizeof error) != 0)
    return c.fail("the loss's gather over the vocabulary's %lld ranks "
                  "failed: %s",
                  (long long)shards, error);
  lse.assign(size_t(n), 0.0);
  target.assign(size_t(n), 0.0);
  for (int64_t t = 0; t < n; ++t) {
    if (w.w[t] == 0.0f)
      continue;
    double mx = all[3 * t], sum = 0.0;
    for (int64_t r = 1; r < shards; ++r)
      mx = std::max(mx, all[3 * (r * n + t)]);
    for (int64_t r = 0; r < shards; ++r) {
      const double *part = &all[3 * (r * n + t)];
      sum += part[1] * std::exp(part[0] - mx);
      target[t] += part[2];
    }
    lse[t] = mx + std::log(sum);
  }
  return 0;
}

} // namespace

int32_t loss_weight(const Call &c) {
  auto a = c.attrs<attrs::loss_weight>();
  TokenWeights w;
  if (int32_t err =
          tokenWeights(c, 0, a.ignore_index, a.has_mask, /*vocab=*/-1, w))
    return err;
  c.operand(a.has_mask ? 2 : 1).set(0, float(w.total));
  return 0;
}

int32_t cross_entropy(const Call &c) {
  Operand logits = c.operand(0), targets = c.operand(1);
  auto a = c.attrs<attrs::cross_entropy>();
  bool hasMask = a.has_mask;
  int64_t at = hasMask ? 3 : 2;
  Operand out = c.operand(at + (a.has_divisor ? 1 : 0));
  int64_t vocab = logits.last(), shards = a.vocab_shards, first = 0;
  if (int32_t rc = vocabularyStart(c, shards, vocab, first))
    return rc;
  TokenWeights w;
  if (int32_t err =
          tokenWeights(c, 1, a.ignore_index, hasMask, vocab * shards, w))
    return err;
  useDivisor(c, a.has_divisor, at, w);
  double total = 0.0; // FP64 sum over tokens: order-independent enough
  if (shards > 1) {
    std::vector<double> lse, target;
    if (int32_t rc =
            overVocabulary(c, logits, targets, w, shards, first, lse, target))
      return rc;
    for (int64_t t = 0; t < targets.numel; ++t)
      total += double(w.w[t]) * (lse[t] - target[t]);
    out.set(0, w.total == 0.0 ? 0.0f : float(total / w.total));
    return 0;
  }
#pragma omp parallel reduction(+ : total)
  {
    Buffer rowBuffer;
#pragma omp for
    for (int64_t t = 0; t < targets.numel; ++t) {
      if (w.w[t] == 0.0f)
        continue;
      const float *row = rowOf(logits, t, vocab, rowBuffer);
      total += double(w.w[t]) *
               double(logSumExp(row, vocab) - row[targets.getIndex(t)]);
    }
  }
  out.set(0, w.total == 0.0 ? 0.0f : float(total / w.total));
  return 0;
}

int32_t cross_entropy_grad(const Call &c) {
  Operand logits = c.operand(0), targets = c.operand(1);
  auto a = c.attrs<attrs::cross_entropy_grad>();
  bool hasMask = a.has_mask;
  int64_t at = hasMask ? 3 : 2;
  Operand dloss = c.operand(at), out = c.operand(at + (a.has_divisor ? 2 : 1));
  int64_t vocab = logits.last(), shards = a.vocab_shards, first = 0;
  if (int32_t rc = vocabularyStart(c, shards, vocab, first))
    return rc;
  TokenWeights w;
  if (int32_t err =
          tokenWeights(c, 1, a.ignore_index, hasMask, vocab * shards, w))
    return err;
  useDivisor(c, a.has_divisor, at + 1, w);
  // Split over the ranks, each token's log-sum-exp is the whole
  // vocabulary's.
  std::vector<double> wholeLse, unused;
  if (shards > 1)
    if (int32_t rc = overVocabulary(c, logits, targets, w, shards, first,
                                    wholeLse, unused))
      return rc;
  float g = dloss.get(0);
  bool direct = out.dtype == INFIR2RT_F32;
#pragma omp parallel
  {
    Buffer rowBuffer, outBuffer;
#pragma omp for
    for (int64_t t = 0; t < targets.numel; ++t) {
      // FP32 results straight into the output, others a row at a time.
      float *o = direct ? reinterpret_cast<float *>(out.ptr) + t * vocab
                        : outBuffer.resize(vocab);
      if (w.w[t] == 0.0f || w.total == 0.0) {
        std::fill(o, o + vocab, 0.0f);
      } else {
        const float *row = rowOf(logits, t, vocab, rowBuffer);
        float lse = shards > 1 ? float(wholeLse[t]) : logSumExp(row, vocab),
              coeff = float(g * w.w[t] / w.total);
        int64_t target = targets.getIndex(t) - first;
        for (int64_t i = 0; i < vocab; ++i)
          o[i] = coeff * (std::exp(row[i] - lse) - (i == target ? 1.0f : 0.0f));
      }
      if (out.dtype == INFIR2RT_BF16) {
        uint16_t *dst = reinterpret_cast<uint16_t *>(out.ptr) + t * vocab;
#pragma omp simd
        for (int64_t i = 0; i < vocab; ++i)
          dst[i] = floatToBF16(o[i]);
      } else if (!direct) {
        for (int64_t i = 0; i < vocab; ++i)
          out.set(t * vocab + i, o[i]);
      }
    }
  }
  return 0;
}

} // namespace infir2::rt::cpu
