//===- Decode.cpp - infir2-data decode ------------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Reads one JSON array of token ids per line and writes {"text": ...} lines.
// The tokenizer returns the exact bytes; a JSON string must be UTF-8, so a
// sequence of ids that ends inside a character (or never forms one) has
// those bytes written as U+FFFD.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Jsonl.h"
#include "Tokenizer.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

using namespace infir2;
using namespace infir2::data;
using json = nlohmann::json;
using rt::Expected;

namespace {

struct DecodeOptions {
  std::string tokenizer;
  std::string input;
};

Expected<std::vector<uint32_t>> parseIds(std::string_view line) {
  Expected<json> parsed = parseJsonLine(line);
  if (!parsed)
    return parsed.failure();
  const json &ids = *parsed;
  if (!ids.is_array())
    return rt::fail("expected a JSON array of token ids");
  std::vector<uint32_t> out;
  out.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!ids[i].is_number_unsigned() || ids[i].get<uint64_t>() > UINT32_MAX)
      return rt::fail("element %zu is not a token id: %s", i,
                      ids[i].dump().c_str());
    out.push_back(ids[i].get<uint32_t>());
  }
  return out;
}

rt::Status runDecode(const DecodeOptions &options) {
  Expected<rt::Tokenizer> tokenizer = rt::Tokenizer::load(options.tokenizer);
  if (!tokenizer)
    return tokenizer.failure();
  return forEachLine(options.input, [&](std::string_view line) -> rt::Status {
    Expected<std::vector<uint32_t>> ids = parseIds(line);
    if (!ids)
      return ids.failure();
    Expected<std::string> text = tokenizer->decode(*ids);
    if (!text)
      return text.failure();
    json doc = {{"text", std::move(*text)}};
    std::string out =
        doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size())
      return rt::fail("cannot write the output");
    return rt::Status::ok();
  });
}

} // namespace

Command data::addDecodeCommand(CLI::App &app) {
  auto options = std::make_shared<DecodeOptions>();
  CLI::App *cmd = app.add_subcommand(
      "decode", "JSON arrays of token ids -> {\"text\": ...} lines");
  cmd->add_option("--tokenizer", options->tokenizer,
                  "a Hugging Face tokenizer.json (byte-level BPE)")
      ->required();
  cmd->add_option("--input", options->input,
                  "one JSON array of ids per line (default: standard input)");
  return {cmd, [options] { return runDecode(*options); }};
}
