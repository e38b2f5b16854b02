//===- Encode.cpp - infir2-data encode ------------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Reads JSONL documents {"text": ...} and writes one JSON array of token ids
// per document. Bytes that are not valid UTF-8 (even inside the JSON string)
// are replaced by U+FFFD before parsing, the tokenizer's own rule.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Jsonl.h"
#include "Tokenizer.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

using namespace infir2;
using namespace infir2::data;
using json = nlohmann::json;
using rt::Expected;

namespace {

struct EncodeOptions {
  std::string tokenizer;
  std::string input;
  bool addSpecialTokens = true;
  bool stats = false;
};

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

rt::Status runEncode(const EncodeOptions &options) {
  Clock::time_point start = Clock::now();
  Expected<rt::Tokenizer> tokenizer = rt::Tokenizer::load(options.tokenizer);
  if (!tokenizer)
    return tokenizer.failure();
  double loadSeconds = secondsSince(start);
  double encodeSeconds = 0;
  size_t documents = 0, bytes = 0, tokens = 0;
  std::string out;
  rt::Status status =
      forEachLine(options.input, [&](std::string_view line) -> rt::Status {
        Expected<std::string> text = documentText(line);
        if (!text)
          return text.failure();
        Clock::time_point encodeStart = Clock::now();
        std::vector<uint32_t> ids =
            tokenizer->encode(*text, options.addSpecialTokens);
        encodeSeconds += secondsSince(encodeStart);
        ++documents;
        bytes += text->size();
        tokens += ids.size();
        out.clear();
        out += '[';
        char digits[16];
        for (uint32_t id : ids) {
          if (out.size() > 1)
            out += ',';
          out.append(digits, std::to_chars(digits, digits + 16, id).ptr);
        }
        out += "]\n";
        if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size())
          return rt::fail("cannot write the output");
        return rt::Status::ok();
      });
  if (status && options.stats)
    std::fprintf(stderr,
                 "encode: %zu documents, %zu bytes of text, %zu tokens; "
                 "tokenizer loaded in %.2f s; encoding %.2f s: %.2f MB/s, "
                 "%.0f tokens/s; whole run %.2f s\n",
                 documents, bytes, tokens, loadSeconds, encodeSeconds,
                 bytes / 1e6 / encodeSeconds, tokens / encodeSeconds,
                 secondsSince(start));
  return status;
}

} // namespace

Command data::addEncodeCommand(CLI::App &app) {
  auto options = std::make_shared<EncodeOptions>();
  CLI::App *cmd = app.add_subcommand(
      "encode",
      "JSONL documents {\"text\": ...} -> one JSON array of token ids "
      "per line");
  cmd->add_option("--tokenizer", options->tokenizer,
                  "a Hugging Face tokenizer.json (byte-level BPE)")
      ->required();
  cmd->add_option("--input", options->input,
                  "the JSONL documents (default: standard input)");
  cmd->add_flag("!--no-special-tokens", options->addSpecialTokens,
                "leave out what the post-processor's template adds");
  cmd->add_flag("--stats", options->stats,
                "print the throughput of the tokenizer to standard error");
  return {cmd, [options] { return runEncode(*options); }};
}
