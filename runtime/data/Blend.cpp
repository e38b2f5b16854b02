//===- Blend.cpp - Weighted mixtures of token sources ---------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "Blend.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

using namespace infir2::rt;

Blend::Blend(std::vector<double> weights,
             std::vector<std::unique_ptr<TokenSource>> sources)
    : weights_(std::move(weights)), sources_(std::move(sources)),
      taken_(sources_.size(), 0) {
  double sum = std::accumulate(weights_.begin(), weights_.end(), 0.0);
  for (double &w : weights_)
    w /= sum;
}

std::pair<size_t, int64_t> Blend::locate(int64_t index) {
  if (index < next_) { // an earlier sample (a restart): count again from 0
    next_ = 0;
    std::fill(taken_.begin(), taken_.end(), 0);
  }
  for (;;) {
    double at = std::max(double(next_), 1.0);
    size_t best = 0;
    double bestError = weights_[0] * at - double(taken_[0]);
    for (size_t d = 1; d < weights_.size(); ++d)
      if (double error = weights_[d] * at - double(taken_[d]);
          error > bestError) {
        best = d;
        bestError = error;
      }
    int64_t local = taken_[best]++;
    if (next_++ == index)
      return {best, local};
  }
}

Status Blend::sample(int64_t index, int32_t *tokens, float *weights,
                     int32_t *segments) {
  auto [source, local] = locate(index);
  return sources_[source]->sample(local, tokens, weights, segments);
}

int64_t Blend::samplesPerEpoch() const {
  int64_t n = 0;
  for (const auto &s : sources_)
    n += s->samplesPerEpoch();
  return n;
}

bool Blend::masked() const {
  for (const auto &s : sources_)
    if (s->masked())
      return true;
  return false;
}

bool Blend::packed() const {
  for (const auto &s : sources_)
    if (s->packed())
      return true;
  return false;
}

std::string Blend::describe() const {
  std::string text = "blend of " + std::to_string(sources_.size()) + ":";
  for (size_t d = 0; d < sources_.size(); ++d) {
    char share[32];
    std::snprintf(share, sizeof share, " %.3g ×", weights_[d]);
    text += (d ? ";" : "") + std::string(share) + " " + sources_[d]->describe();
  }
  return text;
}
