//===- Tokenizer.h - Hugging Face byte-level BPE tokenizers -----*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// A byte-level BPE tokenizer read from a Hugging Face `tokenizer.json` (the
// GPT-2 / Qwen2 / Llama 3 family), giving exactly the ids the `tokenizers`
// library gives: added tokens matched in the raw text, the normalizer, the
// pre-tokenizer's splits, BPE merges by rank, the post-processor. What it
// does not implement it refuses when loading, naming the component and its
// path in the JSON; it never tokenizes differently instead.
//
// Input that is not valid UTF-8 is first repaired: each invalid sequence
// (its maximal subpart) becomes U+FFFD, as Python's
// bytes.decode(errors="replace") and WHATWG's TextDecoder do.
//
// Decoding returns the exact bytes: decode(encode(x)) == x for valid UTF-8 x
// under a normalizer that leaves x unchanged.
//
// A Tokenizer caches the words it has seen, so encode() is not const: use
// one Tokenizer per thread.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DATA_TOKENIZER_H
#define INFIR2_RUNTIME_DATA_TOKENIZER_H

#include "infir2/runtime/Expected.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infir2::rt {

class Tokenizer {
public:
  /// Reads a tokenizer.json file.
  static Expected<Tokenizer> load(const std::string &path);
  /// Reads tokenizer.json text; `origin` names it in error messages.
  static Expected<Tokenizer> fromJson(std::string_view json,
                                      const std::string &origin);

  Tokenizer(Tokenizer &&) noexcept;
  Tokenizer &operator=(Tokenizer &&) noexcept;
  ~Tokenizer();

  /// The ids of `text` (any bytes). With `addSpecialTokens`, the
  /// post-processor's template adds its tokens (Qwen2's adds none).
  std::vector<uint32_t> encode(std::string_view text,
                               bool addSpecialTokens = true);
  /// The bytes the ids stand for; an id the tokenizer does not have is an
  /// error naming it.
  Expected<std::string> decode(const std::vector<uint32_t> &ids) const;

  /// One more than the largest id (vocabulary and added tokens).
  uint32_t vocabSize() const;
  /// The id of a token by its text (a vocabulary token in its byte-level
  /// spelling, or an added token's content).
  std::optional<uint32_t> tokenId(std::string_view token) const;

  struct Impl;

private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DATA_TOKENIZER_H
