//===- CliTest.cpp - The trainer's command line ---------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "config/Cli.h"
#include "TempDir.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

using namespace infir2::rt;
using infir2::rt::test::TempDir;

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

/// The flags whose fields differ between `a` and `b`.
std::set<std::string> differences(const RunConfig &a, const RunConfig &b) {
  std::set<std::string> d;
#define FIELD(flag, member)                                                    \
  if (a.member != b.member)                                                    \
  d.insert(flag)
  FIELD("config", configFile);
  FIELD("data", data);
  FIELD("data-format", dataFormat);
  FIELD("loss-mask", lossMask);
  FIELD("packing", packing);
  FIELD("steps", steps);
  FIELD("lr", lr);
  FIELD("schedule", schedule);
  FIELD("warmup", warmup);
  FIELD("decay", decay);
  FIELD("min-lr-ratio", minLrRatio);
  FIELD("micro-batch", microBatch);
  FIELD("grad-accum", gradAccum);
  FIELD("seed", seed);
  FIELD("save", save);
  FIELD("save-every", saveEvery);
  FIELD("max-shard-size", maxShardSize);
  FIELD("tokenizer", tokenizer);
  FIELD("load", load);
  FIELD("load-weights-only", loadWeightsOnly);
  FIELD("eval-data", evalData);
  FIELD("eval-every", evalEvery);
  FIELD("eval-batches", evalBatches);
  FIELD("eval-only", evalOnly);
  FIELD("export-fp8", exportFp8);
  FIELD("log-every", logEvery);
  FIELD("log-jsonl", logJsonl);
  FIELD("device", device);
  FIELD("max-skipped-steps", maxSkipped);
  FIELD("collective-timeout", collectiveTimeout);
  FIELD("trace-optimizer", traceOptimizer);
  FIELD("dump-step", dumpStep);
#undef FIELD
  return d;
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
  EXPECT_EQ(o.dataFormat, DataFormat::U16);
  EXPECT_EQ(o.steps, 7);
  EXPECT_EQ(o.lr, 0.5);
  EXPECT_EQ(o.schedule, LrSchedule::Wsd);
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
  EXPECT_EQ(o.device, DeviceChoice::Cpu);
  EXPECT_EQ(o.dumpStep, "d.st");
}

TEST(Cli, DefaultsAndTheLastValueOfARepeatedFlag) {
  Expected<CommandLine> cl = parse(
      {"--data", "a", "--steps", "3", "--steps", "4", "--log-every", "0"});
  ASSERT_TRUE(cl) << cl.message();
  EXPECT_EQ(cl->config.steps, 4);
  EXPECT_EQ(cl->config.logEvery, 1); // 0 means every step
  EXPECT_EQ(cl->config.lr, 1e-3);
  EXPECT_EQ(cl->config.schedule, LrSchedule::Cosine);
  EXPECT_EQ(cl->config.device, DeviceChoice::Auto);
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

TEST(Cli, ModeFlagsAndTheirRequirements) {
  TempDir dir;
  std::string tok = dir.write("tokenizer.json", "{}");
  Expected<CommandLine> cl =
      parse({"--eval-only", "--eval-data", "held", "--tokenizer", tok.c_str(),
             "--max-shard-size", "2GiB"});
  ASSERT_TRUE(cl) << cl.message(); // no --data needed
  EXPECT_TRUE(cl->config.evalOnly);
  EXPECT_EQ(cl->config.tokenizer, tok);
  EXPECT_EQ(cl->config.maxShardSize, 2LL << 30);
  cl = parse({"--load", "ck", "--export-fp8", "out"});
  ASSERT_TRUE(cl) << cl.message();
  EXPECT_EQ(cl->config.exportFp8, "out");
  EXPECT_FALSE(cl->config.evalOnly);
  EXPECT_EQ(cl->config.maxShardSize, 5'000'000'000);
  cl = parse({"--load", "ck", "--generate", "--prompt", "x", "--temperature",
              "1e-6", "--top-p", "1"});
  ASSERT_TRUE(cl) << cl.message(); // the smallest temperature, all tokens
  EXPECT_TRUE(cl->config.generate);

  std::string missing = dir / "nope";
  std::string noTokenizer =
      "--tokenizer: " + missing + ": no such file or directory";
  struct Case {
    std::vector<const char *> args;
    std::string message;
  } cases[] = {
      {{"--eval-only"}, "--eval-only needs --eval-data"},
      {{"--export-fp8", "out"},
       "--export-fp8 needs --load (the model to export)"},
      {{"--eval-only", "--eval-data", "h", "--load", "ck", "--export-fp8", "o"},
       "--eval-only and --export-fp8 cannot be used together"},
      {{"--data", "a", "--eval-only=maybe"},
       "--eval-only expects true or false, got 'maybe'"},
      {{"--data", "a", "--tokenizer", missing.c_str()}, noTokenizer},
      {{"--generate", "--prompt", "x"},
       "--generate needs --load PATH (the model to generate with)"},
      {{"--load", "ck", "--generate"}, "--generate needs --prompt TEXT"},
      {{"--load", "ck", "--generate", "--prompt", "x", "--temperature", "1e-9"},
       "--temperature must be 0 (greedy) or a number from 1e-06 up, got "
       "1e-09"},
      {{"--load", "ck", "--generate", "--prompt", "x", "--top-p", "1.5"},
       "--top-p must be in (0, 1], got 1.5"},
  };
  for (const Case &c : cases) {
    Expected<CommandLine> bad = parse(c.args);
    ASSERT_FALSE(bad) << c.message;
    EXPECT_EQ(bad.message(), c.message);
  }
}

TEST(Cli, ShardSizesInHuggingFaceUnits) {
  std::pair<const char *, int64_t> good[] = {{"5GB", 5'000'000'000},
                                             {"500MB", 500'000'000},
                                             {"100KB", 100'000},
                                             {"2GiB", 2LL << 30},
                                             {"512MiB", 512LL << 20},
                                             {"64KiB", 64 << 10},
                                             {"7B", 7},
                                             {"123", 123},
                                             {"5gb", 5'000'000'000},
                                             {"2gIB", 2LL << 30},
                                             {"1TB", 1'000'000'000'000}};
  for (const auto &[text, bytes] : good) {
    Expected<CommandLine> cl = parse({"--data", "a", "--max-shard-size", text});
    ASSERT_TRUE(cl) << text << ": " << cl.message();
    EXPECT_EQ(cl->config.maxShardSize, bytes) << text;
  }
  for (const char *text :
       {"x", "GB", "5XB", "-5GB", "1.5GB", "5 GB", "9999999999TB"}) {
    Expected<CommandLine> cl = parse({"--data", "a", "--max-shard-size", text});
    ASSERT_FALSE(cl) << text;
    EXPECT_EQ(cl.message(),
              std::string("--max-shard-size expects a size such as 5GB or "
                          "500MB, got '") +
                  text + "'");
  }
  Expected<CommandLine> zero =
      parse({"--data", "a", "--max-shard-size", "0MB"});
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.message(), "--max-shard-size must be at least 1 byte");
}

TEST(CliConfigFile, JsonAndTomlGiveTheSameRunConfig) {
  TempDir dir;
  std::string json =
      dir.write("run.json", R"({"data": "train.txt", "eval_data": "held.txt",
        "steps": 7, "lr": 0.5, "min-lr-ratio": 1, "eval-only": true,
        "max-shard-size": "2GiB", "save-every": 3, "save": "",
        "schedule": "wsd", "collective_timeout": 0.1})");
  std::string toml = dir.write("run.toml", R"(data = "train.txt"
eval_data = "held.txt"
steps = 7
lr = 0.5
min-lr-ratio = 1
eval-only = true
max-shard-size = "2GiB"
save-every = 3
save = ""
schedule = "wsd"
collective_timeout = 0.1
)");
  Expected<CommandLine> a = parse({"--config", json.c_str()});
  std::string equals = "--config=" + toml;
  Expected<CommandLine> b = parse({equals.c_str()});
  ASSERT_TRUE(a) << a.message();
  ASSERT_TRUE(b) << b.message();
  EXPECT_EQ(differences(a->config, b->config), std::set<std::string>{"config"});
  const RunConfig &o = a->config;
  EXPECT_EQ(o.configFile, json);
  EXPECT_EQ(b->config.configFile, toml);
  EXPECT_EQ(o.data, "train.txt");
  EXPECT_EQ(o.evalData, "held.txt");
  EXPECT_EQ(o.steps, 7);
  EXPECT_EQ(o.lr, 0.5);
  EXPECT_EQ(o.minLrRatio, 1.0);
  EXPECT_TRUE(o.evalOnly);
  EXPECT_EQ(o.maxShardSize, 2LL << 30);
  EXPECT_EQ(o.saveEvery, 3);
  EXPECT_EQ(o.schedule, LrSchedule::Wsd);
  EXPECT_EQ(o.collectiveTimeout, 0.1);
  EXPECT_EQ(o.gradAccum, 1); // not in the file: the default
}

TEST(CliConfigFile, TheCommandLineWins) {
  TempDir dir;
  std::string f = dir.write(
      "run.json", R"({"data": "d", "eval-data": "h", "steps": 7, "lr": 0.5,
                      "eval-only": true, "device": "cpu"})");
  // Before --config or after it: the command line's value wins either way.
  Expected<CommandLine> cl = parse({"--steps", "3", "--config", f.c_str(),
                                    "--eval-only=false", "--lr=0.25"});
  ASSERT_TRUE(cl) << cl.message();
  EXPECT_EQ(cl->config.steps, 3);
  EXPECT_EQ(cl->config.lr, 0.25);
  EXPECT_FALSE(cl->config.evalOnly);
  EXPECT_EQ(cl->config.device, DeviceChoice::Cpu); // from the file
  EXPECT_EQ(cl->config.evalData, "h");
}

TEST(CliConfigFile, BadFilesNameTheFileAndTheKey) {
  TempDir dir;
  struct Case {
    const char *name, *text, *message;
  } cases[] = {
      {"a.json", R"({"data": "d", "lrr": 1})", "unknown key 'lrr'"},
      {"b.toml", "data = \"d\"\nlrr = 1\n", "unknown key 'lrr'"},
      {"c.json", R"({"steps": "7"})",
       "'steps' must be an integer, not a string"},
      {"d.json", R"({"steps": 1.5})",
       "'steps' must be an integer, not a floating-point number"},
      {"e.json", R"({"lr": true})", "'lr' must be a number, not a boolean"},
      {"f.json", R"({"eval-only": "yes"})",
       "'eval-only' must be true or false, not a string"},
      {"g.json", R"({"data": 3})", "'data' must be a string, not an integer"},
      {"h.json", R"({"data": null})", "'data' must be a string, not null"},
      {"i.json", R"({"data": ["a"]})", "'data' must be a string, not an array"},
      {"j.toml", "[data]\nx = 1\n", "'data' must be a string, not a table"},
      {"k.toml", "seed = 1979-05-27\n",
       "'seed' must be an integer, not a date or time"},
      {"l.json", R"({"max-shard-size": 1.5})",
       "'max-shard-size' must be a number of bytes or a string such as "
       "\"5GB\", not a floating-point number"},
      {"m.json", R"({"eval_data": "a", "eval-data": "b"})",
       "'eval-data' and 'eval_data' are the same key"},
      {"n.json", "[1, 2]",
       "expected a JSON object of options, as {\"steps\": 100}"},
      {"o.yaml", "steps: 1", "a config file must be .json or .toml"},
  };
  for (const Case &c : cases) {
    std::string path = dir.write(c.name, c.text);
    Expected<CommandLine> cl = parse({"--data", "d", "--config", path.c_str()});
    ASSERT_FALSE(cl) << c.name;
    EXPECT_EQ(cl.message(), path + ": " + c.message);
  }
  std::string missing = dir / "missing.json";
  Expected<CommandLine> cl = parse({"--config", missing.c_str()});
  ASSERT_FALSE(cl);
  EXPECT_EQ(cl.message(), missing + ": cannot open: No such file or directory");
  // A type-correct bad value is the flag's own error.
  std::string negative = dir.write("neg.json", R"({"steps": -1})");
  cl = parse({"--data", "d", "--config", negative.c_str()});
  ASSERT_FALSE(cl);
  EXPECT_EQ(cl.message(), "--steps expects a non-negative integer, got '-1'");
}

TEST(CliConfigFile, SyntaxErrorsNameTheLine) {
  TempDir dir;
  std::string json =
      dir.write("bad.json", "{\n  \"steps\": 7,\n  \"lr\" 0.5\n}");
  Expected<CommandLine> cl = parse({"--config", json.c_str()});
  ASSERT_FALSE(cl);
  EXPECT_EQ(cl.message().rfind(json + ":3:", 0), 0u) << cl.message();
  EXPECT_NE(cl.message().find(": invalid JSON: syntax error"),
            std::string::npos)
      << cl.message();
  std::string toml = dir.write("bad.toml", "steps = 7\n\nlr = = 0.5\n");
  cl = parse({"--config", toml.c_str()});
  ASSERT_FALSE(cl);
  EXPECT_EQ(cl.message().rfind(toml + ":3:", 0), 0u) << cl.message();
  EXPECT_NE(cl.message().find(": invalid TOML: "), std::string::npos)
      << cl.message();
}

TEST(CliConfigFile, ToJsonReadsBackAsTheSameRunConfig) {
  TempDir dir;
  RunConfig c; // every field away from its default
  c.data = "train data";
  c.dataFormat = DataFormat::U32;
  c.lossMask = "mask";
  c.packing = Packing::Documents;
  c.steps = 7;
  c.lr = 0.1 + 0.2; // 0.30000000000000004: every digit must survive
  c.schedule = LrSchedule::Wsd;
  c.warmup = 2;
  c.decay = 3;
  c.minLrRatio = 1.0 / 3;
  c.microBatch = 4;
  c.gradAccum = 5;
  c.seed = 6;
  c.save = "ck";
  c.saveEvery = 8;
  c.maxShardSize = (2LL << 30) + 1;
  c.tokenizer = dir.write("tokenizer.json", "{}");
  c.load = "-old"; // a value like a flag
  c.loadWeightsOnly = true;
  c.evalData = "held";
  c.evalEvery = 9;
  c.evalBatches = 10;
  c.evalOnly = true;
  c.logEvery = 11;
  c.logJsonl = "log.jsonl";
  c.device = DeviceChoice::Cpu;
  c.maxSkipped = 12;
  c.collectiveTimeout = 61.5;
  c.traceOptimizer = "trace";
  c.dumpStep = "d.st";
  c.configFile = dir / "run.json";
  RunConfig exporting = c;
  exporting.evalOnly = false;
  exporting.exportFp8 = "fp8";
  exporting.configFile = dir / "export.json";
  std::set<std::string> all = differences(c, RunConfig{});
  all.insert("export-fp8");
  EXPECT_EQ(all.size(), 32u);
  for (const RunConfig &config : {c, exporting}) {
    std::string json = toJson(config);
    EXPECT_EQ(json.find('\n'), std::string::npos); // one line
    dir.write(config.configFile.substr(dir.str().size() + 1), json);
    Expected<CommandLine> cl = parse({"--config", config.configFile.c_str()});
    ASSERT_TRUE(cl) << cl.message();
    EXPECT_EQ(differences(cl->config, config), std::set<std::string>{}) << json;
    std::set<std::string> changed = differences(config, RunConfig{});
    changed.insert(config.evalOnly ? "export-fp8" : "eval-only");
    EXPECT_EQ(changed, all);
  }
  // Under the flags' names, in --help order.
  EXPECT_EQ(toJson(RunConfig{}).rfind("{\"config\":\"\",\"data\":\"\",", 0), 0u)
      << toJson(RunConfig{});
}
