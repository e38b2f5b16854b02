//===- Loss.cpp - Cross-entropy on the CPU --------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// cross_entropy and its gradient, with the loss mask and the ignore index:
// targets checked, the log-sum-exp and the sum over tokens in FP64.
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

int32_t tokenWeights(const Call &c, const Operand &targets, bool hasMask,
                     int64_t vocab, TokenWeights &out) {
  int64_t ignore = c.intAttr(0);
  Operand mask = hasMask ? c.operand(2) : Operand{};
  out.w.resize(targets.numel);
  for (int64_t t = 0; t < targets.numel; ++t) {
    int64_t id = targets.getIndex(t);
    float w = id == ignore ? 0.0f : (hasMask ? mask.get(t) : 1.0f);
    if (w != 0.0f && (id < 0 || id >= vocab))
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

} // namespace

int32_t cross_entropy(const Call &c) {
  Operand logits = c.operand(0), targets = c.operand(1);
  bool hasMask = c.attr(1) != 0.0;
  Operand out = c.operand(hasMask ? 3 : 2);
  int64_t vocab = logits.last();
  TokenWeights w;
  if (int32_t err = tokenWeights(c, targets, hasMask, vocab, w))
    return err;
  Buffer bl;
  const float *L = logits.floats(bl);
  double total = 0.0; // FP64 sum over tokens: order-independent enough
#pragma omp parallel for reduction(+ : total)
  for (int64_t t = 0; t < targets.numel; ++t) {
    if (w.w[t] == 0.0f)
      continue;
    const float *row = L + t * vocab;
    total += double(w.w[t]) *
             double(logSumExp(row, vocab) - row[targets.getIndex(t)]);
  }
  out.set(0, w.total == 0.0 ? 0.0f : float(total / w.total));
  return 0;
}

int32_t cross_entropy_grad(const Call &c) {
  Operand logits = c.operand(0), targets = c.operand(1);
  bool hasMask = c.attr(1) != 0.0;
  Operand dloss = c.operand(hasMask ? 3 : 2), out = c.operand(hasMask ? 4 : 3);
  int64_t vocab = logits.last();
  TokenWeights w;
  if (int32_t err = tokenWeights(c, targets, hasMask, vocab, w))
    return err;
  float g = dloss.get(0);
  Buffer bl, bo;
  const float *L = logits.floats(bl);
  float *O = out.output(bo);
#pragma omp parallel for
  for (int64_t t = 0; t < targets.numel; ++t) {
    float *o = O + t * vocab;
    if (w.w[t] == 0.0f || w.total == 0.0) {
      std::fill(o, o + vocab, 0.0f);
      continue;
    }
    const float *row = L + t * vocab;
    float lse = logSumExp(row, vocab), coeff = float(g * w.w[t] / w.total);
    int64_t target = targets.getIndex(t);
    for (int64_t i = 0; i < vocab; ++i)
      o[i] = coeff * (std::exp(row[i] - lse) - (i == target ? 1.0f : 0.0f));
  }
  out.store(O);
  return 0;
}

} // namespace infir2::rt::cpu
