//===- CliTest.cpp - The trainer's command line ---------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "Cli.h"

#include <gtest/gtest.h>

#include <vector>

using namespace infir2::rt;

namespace {

Manifest compiled() {
  Manifest m;
  m.batch = 4;
  m.seq = 128;
  m.vocab = 256;
  m.zero1WorldSize = 2;
  m.optimizer = ManifestOptimizer{"adamw", 0.9, 0.95, 1e-8, 0.1, 1.0};
  return m;
}

Expected<CommandLine> parse(std::vector<const char *> args) {
  args.insert(args.begin(), "trainer");
  return parseCommandLine(int(args.size()), args.data(), compiled());
}

} // namespace

TEST(Cli, ParsesEveryFlagIntoTheRunConfig) {
  Expected<CommandLine> cl = parse({"--data",
                                    "train.txt",
                                    "--data-format=u16",
                                    "--steps",
                                    "7",
                                    "--lr=0.5",
                                    "--schedule",
                                    "wsd",
                                    "--warmup",
                                    "2",
                                    "--decay",
                                    "3",
                                    "--min-lr-ratio",
                                    "0.25",
                                    "--micro-batch",
                                    "4",
                                    "--grad-accum",
                                    "2",
                                    "--seed",
                                    "9",
                                    "--save",
                                    "ck",
                                    "--save-every",
                                    "5",
                                    "--load",
                                    "old",
                                    "--eval-data",
                                    "held.txt",
                                    "--eval-every",
                                    "4",
                                    "--eval-batches",
                                    "3",
                                    "--log-every",
                                    "6",
                                    "--log-jsonl",
                                    "log.jsonl",
                                    "--device",
                                    "cpu",
                                    "--dump-step",
                                    "d.st"});
  ASSERT_TRUE(cl) << cl.message();
  EXPECT_FALSE(cl->help);
  const RunConfig &o = cl->config;
  EXPECT_EQ(o.data, "train.txt");
  EXPECT_EQ(o.dataFormat, "u16");
  EXPECT_EQ(o.steps, 7);
  EXPECT_EQ(o.lr, 0.5);
  EXPECT_EQ(o.schedule, "wsd");
  EXPECT_EQ(o.warmup, 2);
  EXPECT_EQ(o.decay, 3);
  EXPECT_EQ(o.minLrRatio, 0.25);
  EXPECT_EQ(o.microBatch, 4);
  EXPECT_EQ(o.gradAccum, 2);
  EXPECT_EQ(o.seed, 9);
  EXPECT_EQ(o.save, "ck");
  EXPECT_EQ(o.saveEvery, 5);
  EXPECT_EQ(o.load, "old");
  EXPECT_EQ(o.evalData, "held.txt");
  EXPECT_EQ(o.evalEvery, 4);
  EXPECT_EQ(o.evalBatches, 3);
  EXPECT_EQ(o.logEvery, 6);
  EXPECT_EQ(o.logJsonl, "log.jsonl");
  EXPECT_EQ(o.device, "cpu");
  EXPECT_EQ(o.dumpStep, "d.st");
}

TEST(Cli, DefaultsAndTheLastValueOfARepeatedFlag) {
  Expected<CommandLine> cl = parse(
      {"--data", "a", "--steps", "3", "--steps", "4", "--log-every", "0"});
  ASSERT_TRUE(cl) << cl.message();
  EXPECT_EQ(cl->config.steps, 4);
  EXPECT_EQ(cl->config.logEvery, 1); // 0 means every step
  EXPECT_EQ(cl->config.lr, 1e-3);
  EXPECT_EQ(cl->config.schedule, "cosine");
  EXPECT_EQ(cl->config.device, "auto");
  EXPECT_EQ(cl->config.gradAccum, 1);
}

TEST(Cli, BadValuesAreOneLineNamingTheFlag) {
  struct Case {
    std::vector<const char *> args;
    const char *message;
  } cases[] = {
      {{"--data", "a", "--lr", "fast"},
       "--lr expects a non-negative number, got 'fast'"},
      {{"--data", "a", "--lr", "inf"},
       "--lr expects a non-negative number, got 'inf'"},
      {{"--data", "a", "--steps", "1.5"},
       "--steps expects a non-negative integer, got '1.5'"},
      // Refused, not clamped (1e20 became the largest step count).
      {{"--data", "a", "--steps", "1e20"},
       "--steps expects a non-negative integer, got '1e20'"},
      {{"--data", "a", "--steps", "99999999999999999999"},
       "--steps expects a non-negative integer, got '99999999999999999999'"},
      {{"--data", "a", "--max-skipped-steps", "0"},
       "--max-skipped-steps must be at least 1"},
      {{"--data", "a", "--collective-timeout", "-5"},
       "--collective-timeout expects a non-negative number, got '-5'"},
      {{"--data", "a", "--schedule", "linear"},
       "--schedule must be wsd, cosine or constant, got 'linear'"},
      {{"--data", "a", "--device", "gpu"},
       "--device must be auto, cuda or cpu, got 'gpu'"},
      {{"--data", "a", "--data-format", "u8"},
       "--data-format must be auto, text, u16 or u32, got 'u8'"},
      {{"--data", "a", "--grad-accum", "0"}, "--grad-accum must be at least 1"},
      {{"--steps", "3"}, "--data FILE is required (see --help)"},
      {{"--data", "a", "--frobnicate", "3"},
       "unknown option '--frobnicate' (see --help)"},
      {{"--data"}, "--data expects a value (see --help)"},
  };
  for (const Case &c : cases) {
    Expected<CommandLine> cl = parse(c.args);
    ASSERT_FALSE(cl) << c.message;
    EXPECT_EQ(cl.message(), c.message);
  }
}

TEST(Cli, TheFirstBadNumberOnTheLineIsReported) {
  Expected<CommandLine> cl =
      parse({"--data", "a", "--warmup", "x", "--lr", "y"});
  ASSERT_FALSE(cl);
  EXPECT_EQ(cl.message(), "--warmup expects a non-negative integer, got 'x'");
}

TEST(Cli, DumpStepNeedsNoData) {
  Expected<CommandLine> cl = parse({"--dump-step", "d.st"});
  ASSERT_TRUE(cl) << cl.message();
  EXPECT_EQ(cl->config.dumpStep, "d.st");
}

TEST(Cli, HelpStatesWhatWasCompiledIn) {
  Expected<CommandLine> cl = parse({"--help"});
  ASSERT_TRUE(cl) << cl.message();
  ASSERT_TRUE(cl->help);
  const std::string &h = cl->helpText;
  EXPECT_EQ(h.rfind("usage: trainer --data FILE [options]\n", 0), 0u) << h;
  EXPECT_NE(h.find("compiled in: micro-batch 4 x seq 128, vocab 256, ZeRO-1 "
                   "world size 2\n"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("optimizer (compiled in): adamw beta1=0.9 beta2=0.95 "
                   "eps=1e-08 weight-decay=0.1 grad-clip=1\n"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("--grad-accum N"), std::string::npos) << h;
}

TEST(Cli, DescribesSgdAndNoOptimizer) {
  Manifest m = compiled();
  m.zero1WorldSize = 0;
  m.optimizer = ManifestOptimizer{"sgd", 0, 0, 0, 0.01, 0.5};
  EXPECT_EQ(describeCompiled(m),
            "compiled in: micro-batch 4 x seq 128, vocab 256, ZeRO-1 world "
            "size none (optimizer state not sharded)\n"
            "optimizer (compiled in): sgd weight-decay=0.01 grad-clip=0.5\n");
  m.optimizer.reset();
  EXPECT_EQ(describeCompiled(m).find("optimizer (compiled in)"),
            std::string::npos);
}
