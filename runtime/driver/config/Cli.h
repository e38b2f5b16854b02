//===- Cli.h - The trainer's command line -----------------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The command line (CLI11), and a --config file under it, into a validated
// RunConfig; and a RunConfig back into the JSON such a file holds. `--help`
// also states what the model was compiled for (shapes, ZeRO-1, the
// optimizer), read from its manifest.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_CONFIG_CLI_H
#define INFIR2_RUNTIME_DRIVER_CONFIG_CLI_H

#include "DataSource.h"
#include "config/Schedule.h"
#include "device/DeviceChoice.h"

#include "infir2/runtime/Expected.h"
#include "infir2/runtime/Manifest.h"

#include <cstdint>
#include <string>

namespace infir2::rt {

/// One training run as the command line describes it.
struct RunConfig {
  std::string data, evalData, save, load, logJsonl, dumpStep, traceOptimizer,
      recordCalls, lossMask;
  DataFormat dataFormat = DataFormat::Auto;
  LrSchedule schedule = LrSchedule::Cosine;
  DeviceChoice device = DeviceChoice::Auto;
  Packing packing = Packing::Auto;
  int64_t steps = 100, warmup = 0, decay = 0, microBatch = 0, gradAccum = 1,
          seed = 0, saveEvery = 0, evalEvery = 0, evalBatches = 8,
          logEvery = 10, maxSkipped = 10;
  double lr = 1e-3, minLrRatio = 0.1;
  /// Seconds a rank waits in a collective for the others (10 minutes).
  double collectiveTimeout = 600;
  /// Take only the weights of a --load checkpoint, not its training state.
  bool loadWeightsOnly = false;
  /// Evaluate --eval-data once (after --load) and exit, training nothing.
  bool evalOnly = false;
  /// Write an FP8 inference export of the loaded model here and exit.
  std::string exportFp8;
  /// Every N-th step, each FP8 quantization's statistics as JSON lines to
  /// `fp8Stats` (0: never; default path beside --log-jsonl).
  int64_t fp8StatsEvery = 0;
  std::string fp8Stats;
  /// Largest weight shard a saved model folder holds, in bytes (5 GB).
  int64_t maxShardSize = 5'000'000'000;
  /// Tokenizer files to copy into every saved folder: a tokenizer.json, or
  /// a folder holding tokenizer.json and its companions.
  std::string tokenizer;
  /// Generate text from --prompt with the decode step and exit.
  bool generate = false;
  std::string prompt;
  /// Wrap --prompt in the chat template (a user turn, then the assistant's).
  bool chat = false;
  int64_t maxNewTokens = 64;
  /// 0: greedy; otherwise softmax(logits / T) within the top-p nucleus.
  double temperature = 0.0, topP = 1.0;
  /// The --config file the options came from, if any (for the record).
  std::string configFile;
};

/// What the command line asked for: a run, or the help text.
struct CommandLine {
  bool help = false;
  std::string helpText; ///< when `help`
  RunConfig config;
};

/// Parses `argv` ("--flag value" and "--flag=value" alike), after the
/// options of its --config file if it names one (RunConfigFile.h), and
/// validates the result. `compiled` describes the model in --help.
Expected<CommandLine> parseCommandLine(int argc, const char *const *argv,
                                       const Manifest &compiled);

/// Checks a configuration's values (required data, ranges), and
/// normalizes what has a meaning (--log-every 0 is 1).
Status validate(RunConfig &config);

/// Every field of `config` under its flag's name, in --help order, as one
/// line of JSON: a --config file that gives the same configuration.
std::string toJson(const RunConfig &config);

/// What the model was compiled for, one line per fact, for --help.
std::string describeCompiled(const Manifest &compiled);

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_CONFIG_CLI_H
