//===- Loss.cpp - Cross-entropy on the CPU --------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// cross_entropy and its gradient, with the loss mask and the ignore index:
// targets checked, the log-sum-exp and the sum over tokens in FP64; and
// loss_weight, the divisor of a loss computed a chunk of tokens at a time.
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
  int64_t vocab = logits.last();
  TokenWeights w;
  if (int32_t err = tokenWeights(c, 1, a.ignore_index, hasMask, vocab, w))
    return err;
  useDivisor(c, a.has_divisor, at, w);
  double total = 0.0; // FP64 sum over tokens: order-independent enough
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
  int64_t vocab = logits.last();
  TokenWeights w;
  if (int32_t err = tokenWeights(c, 1, a.ignore_index, hasMask, vocab, w))
    return err;
  useDivisor(c, a.has_divisor, at + 1, w);
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
        float lse = logSumExp(row, vocab), coeff = float(g * w.w[t] / w.total);
        int64_t target = targets.getIndex(t);
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
