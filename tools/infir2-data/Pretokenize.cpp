//===- Pretokenize.cpp - infir2-data pretokenize --------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Tokenizes documents into a Megatron-LM indexed dataset (P.bin + P.idx, as
// preprocess_data.py writes it: one sequence per document, uint16 ids when
// the vocabulary has fewer than 65,500 tokens, else int32). Inputs are JSONL
// files of {"text": ...} lines (.jsonl, .json) or text files, each of which
// is one document. Batches of documents are tokenized by --workers threads,
// each with a tokenizer of its own, and written in input order.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Jsonl.h"
#include "Tokenizer.h"

#include "infir2/runtime/IndexedDataset.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <thread>
#include <unistd.h>

using namespace infir2;
using namespace infir2::data;
using rt::Expected;

namespace {

struct PretokenizeOptions {
  std::string tokenizer, outputPrefix, eodToken = "<|endoftext|>";
  std::vector<std::string> inputs;
  bool appendEod = false;
  unsigned workers = 1;
};

using Clock = std::chrono::steady_clock;

bool isJsonl(const std::string &path) {
  auto ends = [&](const char *s) {
    std::string suffix(s);
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) ==
               0;
  };
  return ends(".jsonl") || ends(".json");
}

/// Tokenizes documents in batches on several threads and appends them, in
/// order, to the dataset.
class Pretokenizer {
public:
  Pretokenizer(std::vector<rt::Tokenizer> tokenizers,
               rt::IndexedDatasetWriter writer, std::optional<uint32_t> eod)
      : tokenizers_(std::move(tokenizers)), writer_(std::move(writer)),
        eod_(eod), start_(Clock::now()), lastReport_(start_) {}

  rt::Status add(std::string text) {
    bytes_ += text.size();
    batchBytes_ += text.size();
    batch_.push_back(std::move(text));
    if (batch_.size() >= 4096 || batchBytes_ >= (size_t(16) << 20))
      return flush();
    return rt::Status::ok();
  }

  rt::Status finish(const std::string &prefix) {
    INFIR2_RETURN_IF_ERROR(flush());
    INFIR2_RETURN_IF_ERROR(writer_.finish());
    double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    if (progress_)
      std::fputc('\n', stderr);
    std::printf("pretokenize: wrote %s.bin and %s.idx: %lld documents, %lld "
                "tokens, %.1f MB of text in %.2f s (%.2f MB/s)\n",
                prefix.c_str(), prefix.c_str(),
                (long long)writer_.numDocuments(),
                (long long)writer_.numElements(), bytes_ / 1e6, seconds,
                bytes_ / 1e6 / std::max(seconds, 1e-9));
    return rt::Status::ok();
  }

private:
  rt::Status flush() {
    size_t n = batch_.size(), workers = tokenizers_.size();
    std::vector<std::vector<int64_t>> ids(n);
    auto work = [&](size_t w) {
      for (size_t i = w; i < n; i += workers) {
        std::vector<uint32_t> t = tokenizers_[w].encode(batch_[i], true);
        ids[i].assign(t.begin(), t.end());
        if (eod_)
          ids[i].push_back(*eod_);
      }
    };
    std::vector<std::thread> threads;
    for (size_t w = 1; w < workers; ++w)
      threads.emplace_back(work, w);
    work(0);
    for (std::thread &t : threads)
      t.join();
    for (const std::vector<int64_t> &doc : ids)
      INFIR2_RETURN_IF_ERROR(writer_.addDocument(doc.data(), int64_t(doc.size())));
    batch_.clear();
    batchBytes_ = 0;
    report();
    return rt::Status::ok();
  }

  /// A progress line on a terminal, twice a second at most.
  void report() {
    Clock::time_point now = Clock::now();
    if (!isatty(2) || now - lastReport_ < std::chrono::milliseconds(500))
      return;
    lastReport_ = now;
    progress_ = true;
    double seconds = std::chrono::duration<double>(now - start_).count();
    std::fprintf(stderr, "\rpretokenize: %.1f MB, %lld documents, %.2f MB/s",
                 bytes_ / 1e6, (long long)writer_.numDocuments(),
                 bytes_ / 1e6 / std::max(seconds, 1e-9));
  }

  std::vector<rt::Tokenizer> tokenizers_;
  rt::IndexedDatasetWriter writer_;
  std::optional<uint32_t> eod_;
  std::vector<std::string> batch_;
  size_t batchBytes_ = 0, bytes_ = 0;
  Clock::time_point start_, lastReport_;
  bool progress_ = false;
};

rt::Status runPretokenize(const PretokenizeOptions &o) {
  if (o.workers == 0)
    return rt::fail("--workers must be at least 1");
  std::vector<rt::Tokenizer> tokenizers;
  for (unsigned w = 0; w < o.workers; ++w) {
    Expected<rt::Tokenizer> t = rt::Tokenizer::load(o.tokenizer);
    if (!t)
      return t.failure();
    tokenizers.push_back(std::move(*t));
  }
  std::optional<uint32_t> eod;
  if (o.appendEod) {
    eod = tokenizers[0].tokenId(o.eodToken);
    if (!eod)
      return rt::fail("%s has no token '%s' to end documents with (choose one "
                      "with --eod-token)",
                      o.tokenizer.c_str(), o.eodToken.c_str());
  }
  Expected<rt::IndexedDatasetWriter> writer = rt::IndexedDatasetWriter::create(
      o.outputPrefix, rt::tokenDTypeFor(tokenizers[0].vocabSize()));
  if (!writer)
    return writer.failure();
  Pretokenizer run(std::move(tokenizers), std::move(*writer), eod);
  for (const std::string &input : o.inputs) {
    if (isJsonl(input)) {
      INFIR2_RETURN_IF_ERROR(
          forEachLine(input, [&](std::string_view line) -> rt::Status {
            Expected<std::string> text = documentText(line);
            if (!text)
              return text.failure();
            return run.add(std::move(*text));
          }));
      continue;
    }
    std::ifstream in(input, std::ios::binary);
    if (!in)
      return rt::fail("%s: cannot open", input.c_str());
    std::string text((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    if (in.bad())
      return rt::fail("%s: read error", input.c_str());
    INFIR2_RETURN_IF_ERROR(run.add(std::move(text)));
  }
  return run.finish(o.outputPrefix);
}

} // namespace

Command data::addPretokenizeCommand(CLI::App &app) {
  auto options = std::make_shared<PretokenizeOptions>();
  CLI::App *cmd = app.add_subcommand(
      "pretokenize",
      "documents -> a Megatron-LM indexed dataset (PREFIX.bin, PREFIX.idx)");
  cmd->add_option("--tokenizer", options->tokenizer,
                  "a Hugging Face tokenizer.json (byte-level BPE)")
      ->required();
  cmd->add_option("--input", options->inputs,
                  "JSONL files of {\"text\": ...} lines (.jsonl, .json), or "
                  "text files, each one document; repeatable")
      ->required();
  cmd->add_option("--output-prefix", options->outputPrefix,
                  "writes PREFIX.bin and PREFIX.idx")
      ->required();
  cmd->add_flag("--append-eod", options->appendEod,
                "end every document with the --eod-token");
  cmd->add_option("--eod-token", options->eodToken,
                  "the token --append-eod adds (default <|endoftext|>)");
  cmd->add_option("--workers", options->workers,
                  "tokenizing threads (default 1)");
  return {cmd, [options] { return runPretokenize(*options); }};
}
