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
#include "Unicode.h"

#include <CLI/CLI.hpp>
#include <charconv>
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
};

/// The text of one JSONL line.
Expected<std::string> documentText(std::string_view line) {
  std::string repaired;
  std::string_view valid = rt::repairUtf8(line, repaired);
  json doc;
  try {
    doc = json::parse(valid.begin(), valid.end());
  } catch (const json::exception &e) {
    return rt::fail("not valid JSON: %s", e.what());
  }
  if (!doc.is_object())
    return rt::fail("expected an object {\"text\": ...}");
  auto it = doc.find("text");
  if (it == doc.end())
    return rt::fail("\"text\" is missing");
  if (!it->is_string())
    return rt::fail("\"text\" must be a string");
  return it->get<std::string>();
}

rt::Status runEncode(const EncodeOptions &options) {
  Expected<rt::Tokenizer> tokenizer = rt::Tokenizer::load(options.tokenizer);
  if (!tokenizer)
    return tokenizer.failure();
  std::string out;
  return forEachLine(options.input, [&](std::string_view line) -> rt::Status {
    Expected<std::string> text = documentText(line);
    if (!text)
      return text.failure();
    out.clear();
    out += '[';
    char digits[16];
    for (uint32_t id : tokenizer->encode(*text, options.addSpecialTokens)) {
      if (out.size() > 1)
        out += ',';
      out.append(digits, std::to_chars(digits, digits + 16, id).ptr);
    }
    out += "]\n";
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size())
      return rt::fail("cannot write the output");
    return rt::Status::ok();
  });
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
  return {cmd, [options] { return runEncode(*options); }};
}
