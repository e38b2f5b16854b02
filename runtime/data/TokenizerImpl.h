//===- TokenizerImpl.h - A loaded tokenizer's parts -------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Internal: what TokenizerLoad.cpp reads from tokenizer.json and
// Tokenizer.cpp runs.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DATA_TOKENIZERIMPL_H
#define INFIR2_RUNTIME_DATA_TOKENIZERIMPL_H

#include "Bpe.h"
#include "Regex.h"
#include "Tokenizer.h"
#include "Unicode.h"

#include <optional>
#include <unordered_map>

namespace infir2::rt {

/// One Split of the pre-tokenizer (ByteLevel's use_regex is one too).
struct SplitStep {
  Regex regex;
  SplitBehavior behavior;
  bool invert;
};

/// Added tokens matched in the same text: leftmost, then longest, as
/// `tokenizers`' Aho-Corasick does (an alternation, longest first).
struct AddedTokenSet {
  std::optional<Regex> regex;
  std::unordered_map<std::string, uint32_t> ids;
};

/// One item of a TemplateProcessing's `single` template: the sequence
/// itself, or special tokens' ids.
struct TemplateItem {
  bool sequence;
  std::vector<uint32_t> ids;
};

struct Tokenizer::Impl {
  std::vector<NormalForm> normalizers;
  std::vector<SplitStep> splits;
  Bpe bpe;
  /// Tokens with normalized = false are matched in the raw text, the others
  /// in the normalized text between them.
  AddedTokenSet rawAdded, normalizedAdded;
  std::unordered_map<std::string, uint32_t> addedIds;
  std::optional<std::vector<TemplateItem>> single;
  /// Each id's bytes, and whether the id exists.
  std::vector<std::string> idBytes;
  std::vector<bool> idKnown;

  // Buffers reused from call to call.
  std::string repaired, normalized, normalizeScratch;
  std::vector<std::string_view> pieces, nextPieces;

  void encodeText(std::string_view text, std::vector<uint32_t> &ids);
  void encodeNormalized(std::string_view text, std::vector<uint32_t> &ids);
  void encodePretokenized(std::string_view text, std::vector<uint32_t> &ids);
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DATA_TOKENIZERIMPL_H
