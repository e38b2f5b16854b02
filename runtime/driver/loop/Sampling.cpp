//===- Sampling.cpp - Choosing the next token -----------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "loop/Sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

using namespace infir2::rt;

Expected<int64_t> infir2::rt::sampleToken(const float *logits, int64_t vocab,
                                          double temperature, double topP,
                                          std::mt19937_64 &rng) {
  if (vocab < 1)
    return fail("there are no tokens to choose from");
  if (!(temperature == 0.0 ||
        (temperature >= kMinTemperature && std::isfinite(temperature))))
    return fail("the temperature must be 0 (greedy) or in [%g, inf), got %g",
                kMinTemperature, temperature);
  if (!(topP > 0.0 && topP <= 1.0))
    return fail("top-p must be in (0, 1], got %g", topP);
  int64_t best = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    if (!std::isfinite(logits[i]))
      return fail("the logit of token %lld is %s", (long long)i,
                  std::isnan(logits[i]) ? "NaN"
                  : logits[i] > 0       ? "+inf"
                                        : "-inf");
    if (logits[i] > logits[best])
      best = i;
  }
  if (temperature == 0.0)
    return best;
  // Probabilities in FP64, most likely first (ties by id, so that a seed
  // always gives the same draw).
  std::vector<int64_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  std::vector<double> p(vocab);
  // Differences from the largest logit first: finite whatever the logits,
  // and every term in (0, 1] (the largest is 1, so the sum is at least 1).
  double top = double(logits[best]), sum = 0.0;
  for (int64_t i = 0; i < vocab; ++i)
    sum += p[i] = std::exp((double(logits[order[i]]) - top) / temperature);
  // The nucleus: the most likely tokens until their mass reaches top-p.
  int64_t kept = 0;
  double mass = 0.0;
  while (kept < vocab && (kept == 0 || mass < topP * sum))
    mass += p[kept++];
  std::uniform_real_distribution<double> uniform(0.0, mass);
  double u = uniform(rng);
  for (int64_t i = 0; i < kept; ++i) {
    if (u < p[i])
      return order[i];
    u -= p[i];
  }
  return order[kept - 1];
}

size_t infir2::rt::completeUtf8Prefix(std::string_view bytes) {
  // Look back at most 3 bytes for the lead byte of an unfinished character.
  size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    unsigned char c = static_cast<unsigned char>(bytes[n - back]);
    if ((c & 0xC0) == 0x80)
      continue; // a continuation byte: keep looking for its lead
    size_t need = (c & 0xE0) == 0xC0   ? 2
                  : (c & 0xF0) == 0xE0 ? 3
                  : (c & 0xF8) == 0xF0 ? 4
                                       : 1;
    return need > back ? n - back : n;
  }
  return n;
}
