//===- Metrics.h - Progress lines and the JSONL log -------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// What a trainer reports per logged step: a progress line on stdout, and
// (--log-jsonl) one JSON object per line, written with nlohmann-json:
//   {"step":3,"loss":5.41,"lr":0.001,"grad_norm":1.2,"tokens_per_s":2800.5}
// plus "eval_loss" on evaluation steps.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_IO_METRICS_H
#define INFIR2_RUNTIME_DRIVER_IO_METRICS_H

#include "infir2/runtime/Expected.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace infir2::rt {

struct StepMetrics {
  int64_t step = 0, steps = 0;
  double loss = 0.0; ///< the mean over the steps since the last log
  double lr = 0.0, gradNorm = 0.0, tokensPerSecond = 0.0, etaSeconds = 0.0;
  std::optional<double> evalLoss;
  /// For an evaluation alone (--eval-only): the targets it counted; its
  /// record then holds the step, eval_loss, perplexity and eval_tokens.
  std::optional<int64_t> evalTokens;
  /// Why the step was skipped (no update: a non-finite loss, gradient or
  /// value); its record then holds the step and this reason only.
  std::optional<std::string> skipped;
};

/// "step 3/100  loss 5.4100  lr 0.001  grad-norm 1.200  2800 tok/s  eta 12s"
/// (and "  eval-loss 5.3000"), without a newline.
std::string progressLine(const StepMetrics &m);

/// The JSONL record of a step, one line of JSON without a newline.
std::string jsonRecord(const StepMetrics &m);

/// An open --log-jsonl file: truncated for a new run, appended to when a
/// run resumes.
class JsonlLog {
public:
  JsonlLog() = default;
  JsonlLog(const JsonlLog &) = delete;
  JsonlLog &operator=(const JsonlLog &) = delete;
  ~JsonlLog();

  Status open(const std::string &path, bool append);
  bool isOpen() const { return file_ != nullptr; }
  /// Writes one record and flushes it (nothing when not open).
  Status write(const StepMetrics &m);

private:
  std::string path_;
  std::FILE *file_ = nullptr;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_IO_METRICS_H
