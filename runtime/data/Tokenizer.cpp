//===- Tokenizer.cpp - Encoding and decoding ------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "TokenizerImpl.h"

using namespace infir2::rt;

namespace {

/// Calls `onText` for the text between `set`'s tokens and appends the ids of
/// the tokens themselves.
template <typename F>
void splitAddedTokens(const AddedTokenSet &set, std::string_view text,
                      std::vector<uint32_t> &ids, F &&onText) {
  size_t pos = 0, begin, end;
  if (set.regex) {
    while (pos < text.size() && set.regex->find(text, pos, begin, end)) {
      if (begin > pos)
        onText(text.substr(pos, begin - pos));
      ids.push_back(set.ids.at(std::string(text.substr(begin, end - begin))));
      pos = end;
    }
  }
  if (pos < text.size())
    onText(text.substr(pos));
}

} // namespace

void Tokenizer::Impl::encodeText(std::string_view text,
                                 std::vector<uint32_t> &ids) {
  splitAddedTokens(rawAdded, text, ids, [&](std::string_view part) {
    if (normalizers.empty())
      return encodeNormalized(part, ids);
    normalize(part, normalizers[0], normalized);
    for (size_t i = 1; i < normalizers.size(); ++i) {
      normalize(normalized, normalizers[i], normalizeScratch);
      normalized.swap(normalizeScratch);
    }
    encodeNormalized(normalized, ids);
  });
}

void Tokenizer::Impl::encodeNormalized(std::string_view text,
                                       std::vector<uint32_t> &ids) {
  splitAddedTokens(normalizedAdded, text, ids, [&](std::string_view part) {
    encodePretokenized(part, ids);
  });
}

void Tokenizer::Impl::encodePretokenized(std::string_view text,
                                         std::vector<uint32_t> &ids) {
  pieces.clear();
  pieces.push_back(text);
  for (const SplitStep &step : splits) {
    nextPieces.clear();
    for (std::string_view piece : pieces)
      splitPieces(step.regex, step.behavior, step.invert, piece, nextPieces);
    pieces.swap(nextPieces);
  }
  for (std::string_view piece : pieces)
    bpe.encodeWord(piece, ids);
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer &&) noexcept = default;
Tokenizer &Tokenizer::operator=(Tokenizer &&) noexcept = default;
Tokenizer::~Tokenizer() = default;

std::vector<uint32_t> Tokenizer::encode(std::string_view text,
                                        bool addSpecialTokens) {
  std::vector<uint32_t> ids;
  std::string_view valid = repairUtf8(text, impl_->repaired);
  if (!addSpecialTokens || !impl_->single) {
    impl_->encodeText(valid, ids);
    return ids;
  }
  for (const TemplateItem &item : *impl_->single) {
    if (item.sequence)
      impl_->encodeText(valid, ids);
    else
      ids.insert(ids.end(), item.ids.begin(), item.ids.end());
  }
  return ids;
}

Expected<std::string>
Tokenizer::decode(const std::vector<uint32_t> &ids) const {
  std::string bytes;
  for (size_t i = 0; i < ids.size(); ++i) {
    uint32_t id = ids[i];
    if (id >= impl_->idKnown.size() || !impl_->idKnown[id])
      return fail("token %zu: id %u is not in the tokenizer (ids are below "
                  "%u)",
                  i, id, vocabSize());
    bytes += impl_->idBytes[id];
  }
  return bytes;
}

uint32_t Tokenizer::vocabSize() const {
  return uint32_t(impl_->idKnown.size());
}

std::optional<uint32_t> Tokenizer::tokenId(std::string_view token) const {
  std::string key(token);
  if (auto it = impl_->addedIds.find(key); it != impl_->addedIds.end())
    return it->second;
  if (auto it = impl_->bpe.vocab.find(key); it != impl_->bpe.vocab.end())
    return it->second;
  return std::nullopt;
}
