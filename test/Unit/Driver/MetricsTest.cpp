//===- MetricsTest.cpp - Progress lines and the JSONL log -----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "io/Metrics.h"

#include "TempDir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

using namespace infir2::rt;
using infir2::rt::test::TempDir;

namespace {
StepMetrics sample() {
  StepMetrics m;
  m.step = 3;
  m.steps = 100;
  m.loss = 5.41234;
  m.lr = 0.00075;
  m.gradNorm = 1.2;
  m.tokensPerSecond = 2800.4;
  m.etaSeconds = 12.2;
  return m;
}
} // namespace

TEST(Metrics, ProgressLine) {
  StepMetrics m = sample();
  EXPECT_EQ(progressLine(m), "step 3/100  loss 5.4123  lr 0.00075  grad-norm "
                             "1.200  2800 tok/s  eta 12s");
  m.evalLoss = 5.25;
  EXPECT_EQ(progressLine(m), "step 3/100  loss 5.4123  lr 0.00075  grad-norm "
                             "1.200  2800 tok/s  eta 12s  eval-loss 5.2500");
}

TEST(Metrics, JsonRecordInFieldOrder) {
  StepMetrics m = sample();
  std::string line = jsonRecord(m);
  EXPECT_EQ(line.rfind("{\"step\":3,\"loss\":5.41234,\"lr\":0.00075,"
                       "\"grad_norm\":1.2,",
                       0),
            0u)
      << line;
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["tokens_per_s"].get<double>(), 2800.4);
  EXPECT_FALSE(j.contains("eval_loss"));
  m.evalLoss = 5.25;
  j = nlohmann::json::parse(jsonRecord(m));
  EXPECT_EQ(j["eval_loss"].get<double>(), 5.25);
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(Metrics, SkippedStepRecordsItsReasonOnly) {
  StepMetrics m;
  m.step = 7;
  m.loss = 1.5; // not written: the step made no update
  m.skipped = "non-finite loss";
  EXPECT_EQ(jsonRecord(m),
            R"({"step":7,"skipped":true,"reason":"non-finite loss"})");
}

TEST(Metrics, JsonlLogTruncatesOrAppends) {
  TempDir dir;
  std::string path = dir / "log.jsonl";
  auto lines = [&] {
    std::ifstream in(path);
    std::vector<nlohmann::json> out;
    for (std::string l; std::getline(in, l);)
      out.push_back(nlohmann::json::parse(l));
    return out;
  };
  StepMetrics m = sample();
  {
    JsonlLog log;
    ASSERT_TRUE(log.open(path, /*append=*/false));
    ASSERT_TRUE(log.write(m));
    m.step = 4;
    ASSERT_TRUE(log.write(m));
  }
  EXPECT_EQ(lines().size(), 2u);
  {
    JsonlLog log;
    ASSERT_TRUE(log.open(path, /*append=*/true));
    m.step = 5;
    ASSERT_TRUE(log.write(m));
  }
  ASSERT_EQ(lines().size(), 3u);
  EXPECT_EQ(lines()[2]["step"], 5);
  {
    JsonlLog log;
    ASSERT_TRUE(log.open(path, /*append=*/false));
  }
  EXPECT_TRUE(lines().empty());

  JsonlLog bad;
  Status s = bad.open(dir / "no/such/dir/log.jsonl", false);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), dir / "no/such/dir/log.jsonl" +
                             ": cannot write: No such file or "
                             "directory");
}
