//===- Cli.cpp - The trainer's command line -------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// One table names every flag, its RunConfig field and its kind; CLI11 reads
// the flags from it, a --config file's keys are checked against it, and the
// effective configuration is written from it (toJson), so the three cannot
// disagree. Numbers and choices are taken as text and converted here
// (choices into their enums, Choices.h), so that a bad value gets the
// trainer's own one-line message ("--lr expects a non-negative number, got
// 'fast'", "--device must be auto, cuda or cpu, got 'gpu'") rather than
// CLI11's.
//
//===----------------------------------------------------------------------===//

#include "config/Cli.h"
#include "config/RunConfigFile.h"
#include "loop/Sampling.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <type_traits>
#include <variant>
#include <vector>

using namespace infir2::rt;

namespace {

using Field = std::variant<std::string RunConfig::*, int64_t RunConfig::*,
                           double RunConfig::*, bool RunConfig::*,
                           LrSchedule RunConfig::*, DataFormat RunConfig::*,
                           Packing RunConfig::*, DeviceChoice RunConfig::*>;

/// The enum a member pointer of a choice flag points to.
template <typename M> struct MemberType;
template <typename T> struct MemberType<T RunConfig::*> { using type = T; };

/// One command-line flag (and config-file key: its name without dashes).
struct Flag {
  const char *name;
  ValueKind kind;
  Field field;
  const char *value; ///< the value's name in --help
  const char *help;
};

/// Every flag, in --help order.
const Flag kFlags[] = {
    {"--config", ValueKind::Text, &RunConfig::configFile, "FILE",
     "read options from a .json or .toml file, one key per flag (\"lr\", "
     "\"eval-data\"); flags on the command line override it"},
    {"--data", ValueKind::Text, &RunConfig::data, "DATA",
     "training data: a Megatron-LM dataset prefix P (P.bin + P.idx; P.mask "
     "beside it is the loss mask), a blend \"W1 P1 W2 P2 ...\", raw token "
     "ids (.u16, .u32) or UTF-8 text (byte-level tokens); docs/Data.md"},
    {"--data-format", ValueKind::Text, &RunConfig::dataFormat, "F",
     "for raw files: auto (by extension: .u16, .u32, else text), text, u16 "
     "or u32"},
    {"--loss-mask", ValueKind::Text, &RunConfig::lossMask, "P",
     "the loss-mask dataset of --data (default: P.mask beside it, if any)"},
    {"--packing", ValueKind::Text, &RunConfig::packing, "MODE",
     "how a dataset becomes samples: documents (whole documents packed, "
     "each attending only to itself, positions restarting; SFT), stream "
     "(one token stream cut every seq tokens; pre-training) or auto "
     "(default: documents when there is a loss mask, else stream)"},
    {"--steps", ValueKind::Integer, &RunConfig::steps, "N",
     "optimizer steps (default 100)"},
    {"--lr", ValueKind::Real, &RunConfig::lr, "X",
     "peak learning rate (default 1e-3)"},
    {"--schedule", ValueKind::Text, &RunConfig::schedule, "S",
     "wsd, cosine (default) or constant"},
    {"--warmup", ValueKind::Integer, &RunConfig::warmup, "N",
     "linear warmup steps"},
    {"--decay", ValueKind::Integer, &RunConfig::decay, "N",
     "wsd: steps of the final linear decay"},
    {"--min-lr-ratio", ValueKind::Real, &RunConfig::minLrRatio, "X",
     "final lr / peak lr for cosine and wsd (0.1)"},
    {"--micro-batch", ValueKind::Integer, &RunConfig::microBatch, "N",
     "must equal the compiled batch (default: it)"},
    {"--grad-accum", ValueKind::Integer, &RunConfig::gradAccum, "N",
     "micro-batches per optimizer step (default 1)"},
    {"--seed", ValueKind::Integer, &RunConfig::seed, "N",
     "initialization seed (default 0)"},
    {"--save", ValueKind::Text, &RunConfig::save, "DIR",
     "checkpoint directory (DIR/step-NNNNNN)"},
    {"--save-every", ValueKind::Integer, &RunConfig::saveEvery, "N",
     "also checkpoint every N steps (always at the end)"},
    {"--max-shard-size", ValueKind::Size, &RunConfig::maxShardSize, "SIZE",
     "largest weight shard of a saved model folder: bytes, or with a unit "
     "as Hugging Face writes them: 5GB (default), 500MB, 2GiB, 512MiB"},
    {"--tokenizer", ValueKind::Text, &RunConfig::tokenizer, "PATH",
     "a tokenizer.json, or a folder of tokenizer files, to copy into every "
     "saved model folder"},
    {"--load", ValueKind::Text, &RunConfig::load, "PATH",
     "resume from a checkpoint (DIR/step-NNNNNN, or DIR for its newest), or "
     "load the weights of a Hugging Face model folder or .safetensors file"},
    {"--load-weights-only", ValueKind::Bool, &RunConfig::loadWeightsOnly, "",
     "take only the weights of a --load checkpoint: a new run from step 0 "
     "with fresh optimizer state and data order (e.g. SFT after "
     "pre-training)"},
    {"--eval-batches", ValueKind::Integer, &RunConfig::evalBatches, "N",
     "held-out batches per evaluation (default 8; 0: the whole held-out "
     "set)"},
    {"--eval-data", ValueKind::Text, &RunConfig::evalData, "DATA",
     "held-out data (same formats)"},
    {"--eval-every", ValueKind::Integer, &RunConfig::evalEvery, "N",
     "evaluate every N steps (and at the end)"},
    {"--eval-only", ValueKind::Bool, &RunConfig::evalOnly, "",
     "evaluate --eval-data once (after --load, if given) and exit, "
     "training nothing; --data is not needed"},
    {"--export-fp8", ValueKind::Text, &RunConfig::exportFp8, "DIR",
     "write an FP8 inference export of the --load'ed model to DIR and exit, "
     "training nothing; --data is not needed"},
    {"--generate", ValueKind::Bool, &RunConfig::generate, "",
     "generate text from --prompt with the --load'ed model and the compiled "
     "decode step, print it as it comes, and exit"},
    {"--prompt", ValueKind::Text, &RunConfig::prompt, "TEXT",
     "--generate's prompt"},
    {"--chat", ValueKind::Bool, &RunConfig::chat, "",
     "put --prompt in the chat template (Qwen's ChatML: a user turn, then "
     "the assistant's) and stop at its end of turn"},
    {"--max-new-tokens", ValueKind::Integer, &RunConfig::maxNewTokens, "N",
     "--generate: at most N new tokens (default 64)"},
    {"--temperature", ValueKind::Real, &RunConfig::temperature, "T",
     "--generate: 0 (default) for greedy decoding, else (1e-6 or more) "
     "sample from softmax(logits / T)"},
    {"--top-p", ValueKind::Real, &RunConfig::topP, "P",
     "--generate with a temperature: sample within the most likely tokens "
     "whose probabilities reach P (default 1: all); --seed seeds the draws"},
    {"--log-every", ValueKind::Integer, &RunConfig::logEvery, "N",
     "progress line every N steps (default 10)"},
    {"--log-jsonl", ValueKind::Text, &RunConfig::logJsonl, "FILE",
     "one JSON object per logged step"},
    {"--device", ValueKind::Text, &RunConfig::device, "D",
     "auto (default: the GPU when one is usable, else the CPU, saying so), "
     "cuda or cpu"},
    {"--max-skipped-steps", ValueKind::Integer, &RunConfig::maxSkipped, "N",
     "stop after N non-finite steps in a row (default 10)"},
    {"--collective-timeout", ValueKind::Real, &RunConfig::collectiveTimeout,
     "X",
     "seconds a rank waits for the others in a collective before the job "
     "ends, naming the ranks that never arrived (default 600)"},
    {"--trace-optimizer", ValueKind::Text, &RunConfig::traceOptimizer, "DIR",
     "write every optimizer step's gradients, learning rate, and the FP32 "
     "weights and moments it produced to DIR/step-NNNNNN.safetensors (one "
     "process; for checks against another optimizer)"},
    {"--record-calls", ValueKind::Text, &RunConfig::recordCalls, "FILE",
     "count the runtime calls of each step function and the host round "
     "trips per training step (a recording backend over the chosen one), "
     "and write them to FILE as JSON at the end"},
    {"--fp8-stats-every", ValueKind::Integer, &RunConfig::fp8StatsEvery, "N",
     "every N-th step, each FP8 quantization's amax, smallest and largest "
     "scale, fraction saturated and fraction of non-zero values flushed to "
     "zero, named by its op's location and the parameter it reads, as JSON "
     "lines (docs/Fp8Stats.md)"},
    {"--fp8-stats", ValueKind::Text, &RunConfig::fp8Stats, "FILE",
     "where --fp8-stats-every writes (default: beside --log-jsonl, its name "
     "ending in .fp8-stats.jsonl)"},
    {"--dump-step", ValueKind::Text, &RunConfig::dumpStep, "FILE",
     "write the first step's weights, batch, loss and gradients (as F32) to "
     "a safetensors file, then exit"},
};

/// The usage lines, then what was compiled in.
class TrainerFormatter : public CLI::Formatter {
public:
  explicit TrainerFormatter(std::string compiled)
      : compiled_(std::move(compiled)) {}
  std::string make_usage(const CLI::App *, std::string) const override {
    return "usage: trainer --data FILE [options]\n"
           "       trainer --eval-only --eval-data FILE [--load PATH] "
           "[options]\n"
           "       trainer --load PATH --export-fp8 DIR [options]\n"
           "       trainer --load PATH --generate --prompt TEXT [options]\n"
           "       any of these with --config FILE (.json or .toml) holding "
           "the options\n\n" +
           compiled_;
  }

private:
  std::string compiled_;
};

Expected<int64_t> parseInt(const std::string &flag, const std::string &v) {
  char *end = nullptr;
  errno = 0;
  long long x = std::strtoll(v.c_str(), &end, 10);
  // ERANGE: past 2^63, which strtoll would clamp to its largest value.
  if (v.empty() || *end || x < 0 || errno == ERANGE)
    return fail("%s expects a non-negative integer, got '%s'", flag.c_str(),
                v.c_str());
  return int64_t(x);
}

Expected<double> parseDouble(const std::string &flag, const std::string &v) {
  char *end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !std::isfinite(x) || x < 0)
    return fail("%s expects a non-negative number, got '%s'", flag.c_str(),
                v.c_str());
  return x;
}

/// Bytes, as Hugging Face writes a shard size: "5GB" is 5e9 bytes, "2GiB"
/// 2^31; a unit's case does not matter; no unit is bytes.
Expected<int64_t> parseSize(const std::string &flag, const std::string &v) {
  static const std::pair<const char *, int64_t> units[] = {
      {"", 1},
      {"b", 1},
      {"kb", 1'000},
      {"mb", 1'000'000},
      {"gb", 1'000'000'000},
      {"tb", 1'000'000'000'000},
      {"kib", 1LL << 10},
      {"mib", 1LL << 20},
      {"gib", 1LL << 30},
      {"tib", 1LL << 40}};
  size_t digits = 0;
  while (digits < v.size() && std::isdigit((unsigned char)v[digits]))
    ++digits;
  std::string unit = v.substr(digits);
  for (char &c : unit)
    c = char(std::tolower((unsigned char)c));
  Expected<int64_t> n = parseInt(flag, v.substr(0, digits));
  for (const auto &[name, bytes] : units)
    if (n && unit == name && *n <= INT64_MAX / bytes)
      return *n * bytes;
  return fail("%s expects a size such as 5GB or 500MB, got '%s'", flag.c_str(),
              v.c_str());
}

/// The --config argument (the last one, as for every flag), if any.
std::string configArgument(int argc, const char *const *argv) {
  std::string path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--config" && i + 1 < argc)
      path = argv[++i];
    else if (a.rfind("--config=", 0) == 0)
      path = a.substr(9);
  }
  return path;
}

} // namespace

std::string infir2::rt::describeCompiled(const Manifest &m) {
  std::string s = "compiled in: micro-batch " + std::to_string(m.batch) +
                  " x seq " + std::to_string(m.seq) + ", vocab " +
                  std::to_string(m.vocab) + ", ZeRO-1 world size ";
  s += m.zero1WorldSize ? std::to_string(m.zero1WorldSize)
                        : std::string("none (optimizer state not sharded)");
  s += "\n";
  if (const auto &o = m.optimizer) {
    char line[256];
    if (o->kind == "adamw")
      std::snprintf(line, sizeof line,
                    "optimizer (compiled in): adamw beta1=%g beta2=%g eps=%g "
                    "weight-decay=%g grad-clip=%g\n",
                    o->beta1, o->beta2, o->eps, o->weightDecay, o->gradClip);
    else
      std::snprintf(line, sizeof line,
                    "optimizer (compiled in): %s weight-decay=%g "
                    "grad-clip=%g\n",
                    o->kind.c_str(), o->weightDecay, o->gradClip);
    s += line;
  }
  return s;
}

Status infir2::rt::validate(RunConfig &o) {
  if (o.evalOnly && !o.exportFp8.empty())
    return fail("--eval-only and --export-fp8 cannot be used together");
  if (o.evalOnly && o.evalData.empty())
    return fail("--eval-only needs --eval-data");
  if (!o.exportFp8.empty() && o.load.empty())
    return fail("--export-fp8 needs --load (the model to export)");
  if (o.generate && (o.evalOnly || !o.exportFp8.empty()))
    return fail("--generate cannot be used with --eval-only or --export-fp8");
  if (o.generate && o.load.empty())
    return fail("--generate needs --load PATH (the model to generate with)");
  if (o.generate && o.prompt.empty())
    return fail("--generate needs --prompt TEXT");
  if (!o.generate && (!o.prompt.empty() || o.chat))
    return fail("--prompt and --chat go with --generate");
  if (o.maxNewTokens < 1)
    return fail("--max-new-tokens must be at least 1, got %lld",
                (long long)o.maxNewTokens);
  if (!(o.temperature == 0.0 ||
        (o.temperature >= kMinTemperature && std::isfinite(o.temperature))))
    return fail("--temperature must be 0 (greedy) or a number from %g up, "
                "got %g",
                kMinTemperature, o.temperature);
  if (!(o.topP > 0.0 && o.topP <= 1.0))
    return fail("--top-p must be in (0, 1], got %g", o.topP);
  if (o.data.empty() && o.dumpStep.empty() && !o.evalOnly &&
      o.exportFp8.empty() && !o.generate)
    return fail("--data FILE is required (see --help)");
  if (o.gradAccum == 0)
    return fail("--grad-accum must be at least 1");
  if (o.maxSkipped == 0)
    return fail("--max-skipped-steps must be at least 1");
  if (!(o.collectiveTimeout > 0))
    return fail("--collective-timeout must be a positive number of seconds");
  if (o.maxShardSize <= 0)
    return fail("--max-shard-size must be at least 1 byte");
  std::error_code ec;
  if (!o.tokenizer.empty() && !std::filesystem::exists(o.tokenizer, ec))
    return fail("--tokenizer: %s: no such file or directory",
                o.tokenizer.c_str());
  // Checked now, not at the first checkpoint hours later.
  namespace fs = std::filesystem;
  if (!o.tokenizer.empty() && fs::is_directory(o.tokenizer, ec) &&
      !fs::exists(fs::path(o.tokenizer) / "tokenizer.json", ec) &&
      !fs::exists(fs::path(o.tokenizer) / "tokenizer.model", ec))
    return fail("--tokenizer: %s: a folder without tokenizer.json or "
                "tokenizer.model",
                o.tokenizer.c_str());
  if (o.fp8StatsEvery > 0 && o.fp8Stats.empty()) {
    if (o.logJsonl.empty())
      return fail("--fp8-stats-every writes beside --log-jsonl: give "
                  "--log-jsonl FILE or --fp8-stats FILE");
    fs::path log(o.logJsonl);
    o.fp8Stats = (log.parent_path() / log.stem()).string() + ".fp8-stats.jsonl";
  }
  if (!o.fp8Stats.empty() && o.fp8StatsEvery == 0)
    return fail("--fp8-stats goes with --fp8-stats-every N");
  if (o.fp8StatsEvery > 0 && (o.evalOnly || o.generate || !o.exportFp8.empty()))
    return fail("--fp8-stats-every records training steps: not with "
                "--eval-only, --generate or --export-fp8");
  if (o.fp8StatsEvery > 0 && o.fp8Stats == o.logJsonl)
    return fail("--fp8-stats %s is also --log-jsonl: give each its own file",
                o.fp8Stats.c_str());
  if (o.logEvery == 0)
    o.logEvery = 1;
  return Status::ok();
}

std::string infir2::rt::toJson(const RunConfig &o) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const Flag &f : kFlags)
    std::visit(
        [&](auto member) {
          using T = typename MemberType<decltype(member)>::type;
          if constexpr (std::is_enum_v<T>)
            j[f.name + 2] = nameOf(o.*member);
          else
            j[f.name + 2] = o.*member;
        },
        f.field);
  return j.dump();
}

Expected<CommandLine> infir2::rt::parseCommandLine(int argc,
                                                   const char *const *argv,
                                                   const Manifest &compiled) {
  // A --config file's options go before the command line's, where the last
  // value of a flag wins.
  std::vector<std::string> fileArgs;
  if (std::string path = configArgument(argc, argv); !path.empty()) {
    std::map<std::string, ValueKind> keys;
    for (const Flag &f : kFlags)
      keys[f.name + 2] = f.kind;
    Expected<std::vector<std::string>> read = readConfigFile(path, keys);
    if (!read)
      return read.failure();
    fileArgs = std::move(*read);
  }
  std::vector<const char *> args = {argc > 0 ? argv[0] : "trainer"};
  for (const std::string &a : fileArgs)
    args.push_back(a.c_str());
  args.insert(args.end(), argv + std::min(argc, 1), argv + argc);

  CommandLine cl;
  RunConfig &o = cl.config;
  CLI::App app;
  app.formatter(std::make_shared<TrainerFormatter>(describeCompiled(compiled)));
  app.allow_extras();
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  // Numbers and choices are read as text first (see the file comment).
  std::map<std::string, std::string> texts;
  for (const Flag &f : kFlags) {
    if (auto *text = std::get_if<std::string RunConfig::*>(&f.field))
      app.add_option(f.name, o.**text, f.help)->type_name(f.value);
    else if (auto *flag = std::get_if<bool RunConfig::*>(&f.field))
      app.add_flag(f.name, o.**flag, f.help);
    else
      app.add_option(f.name, texts[f.name], f.help)->type_name(f.value);
  }

  try {
    app.parse(int(args.size()), args.data());
  } catch (const CLI::CallForHelp &) {
    cl.help = true;
    cl.helpText = app.help("trainer");
    return cl;
  } catch (const CLI::ArgumentMismatch &e) {
    // "--data: 1 required TEXT missing": a flag without its value.
    std::string what = e.what();
    return fail("%s expects a value (see --help)",
                what.substr(0, what.find(':')).c_str());
  } catch (const CLI::ConversionError &e) {
    // "Could not convert: --eval-only = maybe": only flags convert here.
    std::string what = e.what();
    size_t flag = what.find("--"), eq = what.find(" = ", flag);
    if (flag == std::string::npos || eq == std::string::npos)
      return fail("%s (see --help)", what.c_str());
    return fail("%s expects true or false, got '%s'",
                what.substr(flag, eq - flag).c_str(),
                what.substr(eq + 3).c_str());
  } catch (const CLI::ParseError &e) {
    return fail("%s (see --help)", e.what());
  }
  if (!app.remaining().empty())
    return fail("unknown option '%s' (see --help)",
                app.remaining().front().c_str());

  // In the order given, so that the first bad value is the one reported.
  for (const CLI::Option *opt : app.parse_order()) {
    std::string name = opt->get_name();
    const Flag *f = std::find_if(std::begin(kFlags), std::end(kFlags),
                                 [&](const Flag &f) { return name == f.name; });
    if (f == std::end(kFlags))
      continue;
    const std::string &v = texts[name];
    Status converted = std::visit(
        [&](auto member) -> Status {
          using T = typename MemberType<decltype(member)>::type;
          if constexpr (std::is_enum_v<T>) {
            Expected<T> x = parseChoice<T>(v);
            if (!x)
              return x.failure();
            o.*member = *x;
          } else if constexpr (std::is_same_v<T, double>) {
            Expected<double> x = parseDouble(name, v);
            if (!x)
              return x.failure();
            o.*member = *x;
          } else if constexpr (std::is_same_v<T, int64_t>) {
            Expected<int64_t> x = f->kind == ValueKind::Size
                                      ? parseSize(name, v)
                                      : parseInt(name, v);
            if (!x)
              return x.failure();
            o.*member = *x;
          }
          return Status::ok();
        },
        f->field);
    INFIR2_RETURN_IF_ERROR(converted);
  }
  INFIR2_RETURN_IF_ERROR(validate(o));
  return cl;
}
