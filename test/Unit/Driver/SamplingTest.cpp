//===- SamplingTest.cpp - --generate's choice of the next token -----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Greedy choice and its ties, temperature and top-p sampling against the
// probabilities computed here independently (frequencies over many draws,
// within 5 standard deviations of a binomial count), and where printed
// UTF-8 text may be cut.
//
//===----------------------------------------------------------------------===//

#include "loop/Sampling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace infir2::rt;

namespace {

/// The draws' seed: fixed, so that a failure reproduces, and printed.
constexpr uint64_t kSeed = 20250611;

TEST(Sampling, GreedyTakesTheLargestLogitAndTheLowestIdOfTies) {
  std::mt19937_64 rng(1);
  std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  Expected<int64_t> t = sampleToken(logits.data(), 4, 0.0, 1.0, rng);
  ASSERT_TRUE(t) << t.message();
  EXPECT_EQ(*t, 1);
  logits[3] = 2.5f;
  EXPECT_EQ(*sampleToken(logits.data(), 4, 0.0, 0.5, rng), 3);
}

TEST(Sampling, NaNLogitsAreAnError) {
  std::mt19937_64 rng(1);
  std::vector<float> logits = {0.5f, std::nanf(""), 1.0f};
  Expected<int64_t> t = sampleToken(logits.data(), 3, 0.0, 1.0, rng);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.message(), "the logit of token 1 is NaN");
}

TEST(Sampling, InfiniteLogitsAreAnError) {
  std::mt19937_64 rng(1);
  for (double temperature : {0.0, 1.0}) {
    std::vector<float> logits = {0.5f, INFINITY, 1.0f};
    Expected<int64_t> t = sampleToken(logits.data(), 3, temperature, 1.0, rng);
    ASSERT_FALSE(t);
    EXPECT_EQ(t.message(), "the logit of token 1 is +inf");
    logits = {0.5f, 1.0f, -INFINITY};
    t = sampleToken(logits.data(), 3, temperature, 1.0, rng);
    ASSERT_FALSE(t);
    EXPECT_EQ(t.message(), "the logit of token 2 is -inf");
  }
}

TEST(Sampling, TemperatureAndTopPOutOfRangeAreErrors) {
  std::mt19937_64 rng(1);
  std::vector<float> logits = {0.5f, 2.0f, -1.0f};
  for (double temperature :
       {1e-300, 1e-7, -1.0, double(INFINITY), double(NAN)}) {
    Expected<int64_t> t = sampleToken(logits.data(), 3, temperature, 1.0, rng);
    ASSERT_FALSE(t) << temperature;
    EXPECT_NE(t.message().find("the temperature must be 0 (greedy) or in "
                               "[1e-06, inf)"),
              std::string::npos)
        << t.message();
  }
  for (double topP : {0.0, -0.5, 1.5, double(NAN)}) {
    Expected<int64_t> t = sampleToken(logits.data(), 3, 1.0, topP, rng);
    ASSERT_FALSE(t) << topP;
    EXPECT_NE(t.message().find("top-p must be in (0, 1]"), std::string::npos)
        << t.message();
  }
}

TEST(Sampling, TheSmallestTemperatureIsAlmostGreedyAndNeverNaN) {
  // Logits far apart and at the ends of the float range: every probability
  // stays finite, and the largest logit is drawn.
  std::mt19937_64 rng(kSeed);
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  std::vector<float> logits = {-3e38f, 3e38f, 2.9e38f, 0.0f};
  for (int i = 0; i < 100; ++i) {
    Expected<int64_t> t =
        sampleToken(logits.data(), 4, kMinTemperature, 1.0, rng);
    ASSERT_TRUE(t) << t.message();
    EXPECT_EQ(*t, 1);
  }
}

/// Draws `n` tokens and returns each token's frequency.
std::vector<double> frequencies(const std::vector<float> &logits, double temp,
                                double topP, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> f(logits.size(), 0.0);
  for (int i = 0; i < n; ++i)
    f[size_t(*sampleToken(logits.data(), int64_t(logits.size()), temp, topP,
                          rng))] += 1.0 / n;
  return f;
}

TEST(Sampling, TemperatureSamplesTheSoftmax) {
  std::vector<float> logits = {1.0f, 0.0f, 2.0f, -1.0f};
  double temp = 0.7, z = 0.0;
  std::vector<double> p;
  for (float l : logits)
    z += std::exp(l / temp);
  for (float l : logits)
    p.push_back(std::exp(l / temp) / z);
  const int n = 200000;
  const uint64_t seed = kSeed;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::printf("seed %llu\n", (unsigned long long)seed);
  std::vector<double> f = frequencies(logits, temp, 1.0, n, seed);
  for (size_t i = 0; i < p.size(); ++i)
    EXPECT_NEAR(f[i], p[i], 5.0 * std::sqrt(p[i] * (1 - p[i]) / n))
        << "token " << i;
}

TEST(Sampling, TopPKeepsTheSmallestNucleusReachingP) {
  // Probabilities 0.5, 0.3, 0.15, 0.05 (temperature 1 on their logs):
  // top-p 0.7 keeps {0, 1} (0.5 < 0.7 <= 0.8), renormalized to 5/8, 3/8.
  std::vector<float> logits = {std::log(0.5f), std::log(0.3f),
                               std::log(0.15f), std::log(0.05f)};
  const int n = 100000;
  const uint64_t seed = kSeed;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::printf("seed %llu\n", (unsigned long long)seed);
  std::vector<double> f = frequencies(logits, 1.0, 0.7, n, seed);
  EXPECT_EQ(f[2], 0.0);
  EXPECT_EQ(f[3], 0.0);
  double sd = 5.0 * std::sqrt(0.625 * 0.375 / n);
  EXPECT_NEAR(f[0], 0.625, sd);
  EXPECT_NEAR(f[1], 0.375, sd);
  // A tiny top-p keeps the most likely token alone.
  EXPECT_NEAR(frequencies(logits, 1.0, 0.01, 1000, seed)[0], 1.0, 1e-9);
}

TEST(Sampling, TheSameSeedDrawsTheSameTokens) {
  std::vector<float> logits = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
  EXPECT_EQ(frequencies(logits, 1.0, 0.9, 1000, 42),
            frequencies(logits, 1.0, 0.9, 1000, 42));
}

TEST(Sampling, Utf8IsCutBetweenCharacters) {
  EXPECT_EQ(completeUtf8Prefix(""), 0u);
  EXPECT_EQ(completeUtf8Prefix("abc"), 3u);
  std::string euro = "\xE2\x82\xAC"; // 3 bytes
  EXPECT_EQ(completeUtf8Prefix("a" + euro), 4u);
  EXPECT_EQ(completeUtf8Prefix("a" + euro.substr(0, 2)), 1u);
  EXPECT_EQ(completeUtf8Prefix("a" + euro.substr(0, 1)), 1u);
  std::string emoji = "\xF0\x9F\x98\x80"; // 4 bytes
  EXPECT_EQ(completeUtf8Prefix(emoji.substr(0, 3)), 0u);
  EXPECT_EQ(completeUtf8Prefix(emoji), 4u);
  // Bytes that are not UTF-8 (a byte-level model's) are printed as they are.
  EXPECT_EQ(completeUtf8Prefix("a\x80\x80\x80\x80"), 5u);
}

} // namespace
