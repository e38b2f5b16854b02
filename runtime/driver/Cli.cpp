//===- Cli.cpp - The trainer's command line -------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// CLI11 reads the flags; numbers are taken as text and converted here, so
// that a bad value gets the trainer's own one-line message ("--lr expects a
// non-negative number, got 'fast'") rather than CLI11's.
//
//===----------------------------------------------------------------------===//

#include "Cli.h"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>

using namespace infir2::rt;

namespace {

/// "usage: trainer --data FILE [options]", then what was compiled in.
class TrainerFormatter : public CLI::Formatter {
public:
  explicit TrainerFormatter(std::string compiled)
      : compiled_(std::move(compiled)) {}
  std::string make_usage(const CLI::App *, std::string) const override {
    return "usage: trainer --data FILE [options]\n\n" + compiled_;
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
  if (o.data.empty() && o.dumpStep.empty())
    return fail("--data FILE is required (see --help)");
  if (o.schedule != "wsd" && o.schedule != "cosine" && o.schedule != "constant")
    return fail("--schedule must be wsd, cosine or constant, got '%s'",
                o.schedule.c_str());
  if (o.dataFormat != "auto" && o.dataFormat != "text" &&
      o.dataFormat != "u16" && o.dataFormat != "u32")
    return fail("--data-format must be auto, text, u16 or u32, got '%s'",
                o.dataFormat.c_str());
  if (o.packing != "auto" && o.packing != "documents" &&
      o.packing != "stream")
    return fail("--packing must be auto, documents or stream, got '%s'",
                o.packing.c_str());
  if (o.device != "auto" && o.device != "cuda" && o.device != "cpu")
    return fail("--device must be auto, cuda or cpu, got '%s'",
                o.device.c_str());
  if (o.gradAccum == 0)
    return fail("--grad-accum must be at least 1");
  if (o.maxSkipped == 0)
    return fail("--max-skipped-steps must be at least 1");
  if (!(o.collectiveTimeout > 0))
    return fail("--collective-timeout must be a positive number of seconds");
  if (o.logEvery == 0)
    o.logEvery = 1;
  return Status::ok();
}

Expected<CommandLine> infir2::rt::parseCommandLine(int argc,
                                                   const char *const *argv,
                                                   const Manifest &compiled) {
  CommandLine cl;
  RunConfig &o = cl.config;
  CLI::App app;
  app.formatter(std::make_shared<TrainerFormatter>(describeCompiled(compiled)));
  app.allow_extras();
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  auto text = [&](const char *flag, std::string &to, const char *name,
                  const char *help) {
    app.add_option(flag, to, help)->type_name(name);
  };
  // Numbers are read as text first (see the file comment).
  std::map<std::string, std::string> ints, reals;
  auto integer = [&](const char *flag, const char *help) {
    app.add_option(flag, ints[flag], help)->type_name("N");
  };
  auto real = [&](const char *flag, const char *help) {
    app.add_option(flag, reals[flag], help)->type_name("X");
  };
  text("--data", o.data, "DATA",
       "training data: a Megatron-LM dataset prefix P (P.bin + P.idx; P.mask "
       "beside it is the loss mask), a blend \"W1 P1 W2 P2 ...\", raw token "
       "ids (.u16, .u32) or UTF-8 text (byte-level tokens); docs/Data.md");
  text("--data-format", o.dataFormat, "F",
       "for raw files: auto (by extension: .u16, .u32, else text), text, u16 "
       "or u32");
  text("--loss-mask", o.lossMask, "P",
       "the loss-mask dataset of --data (default: P.mask beside it, if any)");
  text("--packing", o.packing, "MODE",
       "how a dataset becomes samples: documents (whole documents packed, "
       "each attending only to itself, positions restarting; SFT), stream "
       "(one token stream cut every seq tokens; pre-training) or auto "
       "(default: documents when there is a loss mask, else stream)");
  integer("--steps", "optimizer steps (default 100)");
  real("--lr", "peak learning rate (default 1e-3)");
  text("--schedule", o.schedule, "S", "wsd, cosine (default) or constant");
  integer("--warmup", "linear warmup steps");
  integer("--decay", "wsd: steps of the final linear decay");
  real("--min-lr-ratio", "final lr / peak lr for cosine and wsd (0.1)");
  integer("--micro-batch", "must equal the compiled batch (default: it)");
  integer("--grad-accum", "micro-batches per optimizer step (default 1)");
  integer("--seed", "initialization seed (default 0)");
  text("--save", o.save, "DIR", "checkpoint directory (DIR/step-NNNNNN)");
  integer("--save-every", "also checkpoint every N steps (always at the end)");
  text("--load", o.load, "PATH",
       "resume from a checkpoint directory, or load weights from a Hugging "
       "Face .safetensors file");
  text("--eval-data", o.evalData, "DATA", "held-out data (same formats)");
  integer("--eval-every", "evaluate every N steps (and at the end)");
  integer("--eval-batches", "held-out batches per evaluation (default 8)");
  integer("--log-every", "progress line every N steps (default 10)");
  text("--log-jsonl", o.logJsonl, "FILE", "one JSON object per logged step");
  text("--device", o.device, "D",
       "auto (default: the GPU when one is usable, else the CPU, saying so), "
       "cuda or cpu");
  integer("--max-skipped-steps",
          "stop after N non-finite steps in a row (default 10)");
  real("--collective-timeout",
       "seconds a rank waits for the others in a collective before the job "
       "ends, naming the ranks that never arrived (default 600)");
  text("--trace-optimizer", o.traceOptimizer, "DIR",
       "write every optimizer step's gradients, learning rate, and the FP32 "
       "weights and moments it produced to DIR/step-NNNNNN.safetensors (one "
       "process; for checks against another optimizer)");
  text("--dump-step", o.dumpStep, "FILE",
       "write the first step's weights, batch, loss and gradients (as F32) to "
       "a safetensors file, then exit");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &) {
    cl.help = true;
    cl.helpText = app.help("trainer");
    return cl;
  } catch (const CLI::ArgumentMismatch &e) {
    // "--data: 1 required TEXT missing": a flag without its value.
    std::string what = e.what();
    return fail("%s expects a value (see --help)",
                what.substr(0, what.find(':')).c_str());
  } catch (const CLI::ParseError &e) {
    return fail("%s (see --help)", e.what());
  }
  if (!app.remaining().empty())
    return fail("unknown option '%s' (see --help)",
                app.remaining().front().c_str());

  std::map<std::string, int64_t *> intFields = {
      {"--steps", &o.steps},
      {"--warmup", &o.warmup},
      {"--decay", &o.decay},
      {"--micro-batch", &o.microBatch},
      {"--grad-accum", &o.gradAccum},
      {"--seed", &o.seed},
      {"--save-every", &o.saveEvery},
      {"--eval-every", &o.evalEvery},
      {"--eval-batches", &o.evalBatches},
      {"--log-every", &o.logEvery},
      {"--max-skipped-steps", &o.maxSkipped}};
  std::map<std::string, double *> realFields = {
      {"--lr", &o.lr},
      {"--min-lr-ratio", &o.minLrRatio},
      {"--collective-timeout", &o.collectiveTimeout}};
  // In the order given on the command line, so that the first bad value is
  // the one reported.
  for (const CLI::Option *opt : app.parse_order()) {
    std::string flag = opt->get_name();
    if (auto it = intFields.find(flag); it != intFields.end()) {
      Expected<int64_t> v = parseInt(flag, ints[flag]);
      if (!v)
        return v.failure();
      *it->second = *v;
    } else if (auto it = realFields.find(flag); it != realFields.end()) {
      Expected<double> v = parseDouble(flag, reals[flag]);
      if (!v)
        return v.failure();
      *it->second = *v;
    }
  }
  INFIR2_RETURN_IF_ERROR(validate(o));
  return cl;
}
