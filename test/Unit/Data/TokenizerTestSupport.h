//===- TokenizerTestSupport.h - Tiny tokenizer.json for tests ---*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// A tiny byte-level BPE tokenizer.json, written in the test: the 256 byte
// tokens get the ids 0-255 (so byte b is id b), and each test adds merges,
// added tokens or components to it.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TEST_UNIT_DATA_TOKENIZERTESTSUPPORT_H
#define INFIR2_TEST_UNIT_DATA_TOKENIZERTESTSUPPORT_H

#include "Bpe.h"
#include "Tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace infir2::rt::testing {

using json = nlohmann::json;

/// A tokenizer.json with the byte vocabulary, the given extra tokens (ids
/// from 256 on, in order) and merges, a ByteLevel pre-tokenizer without
/// regex (each text between added tokens is one word) and no normalizer.
inline json tinyTokenizer(const std::vector<std::string> &tokens,
                          const json &merges) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b)
    vocab[byteLevelChars()[b]] = b;
  for (size_t i = 0; i < tokens.size(); ++i)
    vocab[tokens[i]] = 256 + i;
  return json{{"version", "1.0"},
              {"truncation", nullptr},
              {"padding", nullptr},
              {"added_tokens", json::array()},
              {"normalizer", nullptr},
              {"pre_tokenizer",
               {{"type", "ByteLevel"},
                {"add_prefix_space", false},
                {"trim_offsets", false},
                {"use_regex", false}}},
              {"post_processor", nullptr},
              {"decoder", {{"type", "ByteLevel"}}},
              {"model",
               {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"vocab", vocab},
                {"merges", merges}}}};
}

inline json addedToken(uint32_t id, const std::string &content, bool special,
                       bool normalized = false) {
  return json{
      {"id", id},          {"content", content}, {"single_word", false},
      {"lstrip", false},   {"rstrip", false},    {"normalized", normalized},
      {"special", special}};
}

/// Loads `j`; a refusal fails the test (through the exception gtest
/// catches).
inline Tokenizer load(const json &j) {
  Expected<Tokenizer> t = Tokenizer::fromJson(j.dump(), "tiny.json");
  if (!t)
    throw std::runtime_error(t.message());
  return std::move(*t);
}

} // namespace infir2::rt::testing

#endif // INFIR2_TEST_UNIT_DATA_TOKENIZERTESTSUPPORT_H
