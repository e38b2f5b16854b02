//===- Metrics.cpp - Progress lines and the JSONL log ---------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "io/Metrics.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstring>

using namespace infir2::rt;

std::string infir2::rt::progressLine(const StepMetrics &m) {
  char line[256];
  int n = std::snprintf(line, sizeof line,
                        "step %lld/%lld  loss %.4f  lr %.3g  grad-norm %.3f  "
                        "%.0f tok/s  eta %.0fs",
                        (long long)m.step, (long long)m.steps, m.loss, m.lr,
                        m.gradNorm, m.tokensPerSecond, m.etaSeconds);
  std::string s(line, size_t(std::max(0, std::min<int>(n, sizeof line - 1))));
  if (m.evalLoss) {
    std::snprintf(line, sizeof line, "  eval-loss %.4f", *m.evalLoss);
    s += line;
  }
  return s;
}

std::string infir2::rt::jsonRecord(const StepMetrics &m) {
  // In this order, so that a reader can cut the first fields (step, loss,
  // lr, grad_norm: what a resumed run must reproduce) off each line.
  nlohmann::ordered_json j;
  j["step"] = m.step;
  if (m.evalTokens) {
    j["eval_loss"] = m.evalLoss.value_or(std::nan(""));
    j["perplexity"] = std::exp(m.evalLoss.value_or(std::nan("")));
    j["eval_tokens"] = *m.evalTokens;
    return j.dump();
  }
  if (m.skipped) {
    j["skipped"] = true;
    j["reason"] = *m.skipped;
    return j.dump();
  }
  j["loss"] = m.loss;
  j["lr"] = m.lr;
  j["grad_norm"] = m.gradNorm;
  j["tokens_per_s"] = m.tokensPerSecond;
  if (m.evalLoss)
    j["eval_loss"] = *m.evalLoss;
  return j.dump();
}

JsonlLog::~JsonlLog() {
  if (file_)
    std::fclose(file_);
}

Status JsonlLog::open(const std::string &path, bool append) {
  path_ = path;
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  if (!file_)
    return fail("%s: cannot write: %s", path.c_str(), std::strerror(errno));
  return Status::ok();
}

Status JsonlLog::write(const StepMetrics &m) {
  if (!file_)
    return Status::ok();
  std::string line = jsonRecord(m) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() ||
      std::fflush(file_) != 0)
    return fail("%s: write failed: %s", path_.c_str(), std::strerror(errno));
  return Status::ok();
}
