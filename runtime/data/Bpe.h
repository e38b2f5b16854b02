//===- Bpe.h - Byte-level BPE: the byte mapping and the merges --*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The model half of a byte-level BPE tokenizer, as Hugging Face `tokenizers`
// runs it: a word (a pre-tokenized piece, as bytes) starts as one symbol per
// byte, each byte's symbol being the GPT-2 byte-to-unicode character of that
// byte; the adjacent pair of lowest merge rank is merged until none is left.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DATA_BPE_H
#define INFIR2_RUNTIME_DATA_BPE_H

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace infir2::rt {

/// GPT-2's bytes_to_unicode(): the printable character (as UTF-8) that
/// stands for each byte in a byte-level vocabulary.
const std::array<std::string, 256> &byteLevelChars();

class Bpe {
public:
  /// Byte-level token string -> id.
  std::unordered_map<std::string, uint32_t> vocab;
  /// (left id << 32 | right id) -> (rank, merged id).
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> merges;
  /// The id of each byte's one-character token.
  std::array<uint32_t, 256> byteIds{};
  /// A word that is itself in the vocabulary is that one token (Llama 3).
  bool ignoreMerges = false;

  /// Appends the ids of one word (raw bytes, not empty).
  void encodeWord(std::string_view word, std::vector<uint32_t> &out);

private:
  void merge(std::string_view word, std::vector<uint32_t> &out);

  /// Words seen before, by their bytes. Cleared when it grows past a bound,
  /// so that memory stays flat on endless input.
  std::unordered_map<std::string, std::vector<uint32_t>> cache_;
  std::string key_;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DATA_BPE_H
