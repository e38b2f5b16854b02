//===- PackedDocuments.cpp - Whole documents packed into samples ----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "PackedDocuments.h"

#include "DocumentStream.h"

#include <algorithm>

using namespace infir2::rt;

PackedDocuments::PackedDocuments(IndexedDataset tokens,
                                 std::optional<IndexedDataset> mask,
                                 const SourceOptions &options)
    : tokens_(std::move(tokens)), mask_(std::move(mask)), o_(options) {}

Expected<std::unique_ptr<PackedDocuments>>
PackedDocuments::create(IndexedDataset tokens,
                        std::optional<IndexedDataset> mask,
                        const SourceOptions &options) {
  INFIR2_RETURN_IF_ERROR(checkMaskMatches(tokens, mask));
  std::unique_ptr<PackedDocuments> p(
      new PackedDocuments(std::move(tokens), std::move(mask), options));
  for (int64_t d = 0, n = p->tokens_.numDocuments(); d < n; ++d) {
    int64_t length = p->tokens_.documentLength(d);
    p->cut_ += length > options.seq + 1;
    p->dropped_ += length < 2;
  }
  if (p->dropped_ == p->tokens_.numDocuments())
    return fail("%s: no document has 2 tokens or more (one input and its "
                "target), so there is nothing to train on",
                p->tokens_.prefix().c_str());
  p->pack(0);
  p->counts_.push_back(int64_t(p->epoch_.starts.size()) - 1);
  return p;
}

int64_t PackedDocuments::usable(int64_t doc) const {
  int64_t length = tokens_.documentLength(doc);
  return length < 2 ? 0 : std::min(length, o_.seq + 1);
}

void PackedDocuments::pack(int64_t e) {
  epoch_.index = e;
  epoch_.order = documentOrder(tokens_.numDocuments(), o_.seed, e, o_.shuffle);
  epoch_.starts.clear();
  int64_t used = o_.seq + 1; // full: the first document starts a sample
  for (size_t k = 0; k < epoch_.order.size(); ++k) {
    int64_t length = usable(epoch_.order[k]);
    if (!length)
      continue;
    if (used + length > o_.seq + 1) {
      epoch_.starts.push_back(int64_t(k));
      used = 0;
    }
    used += length;
  }
  epoch_.starts.push_back(int64_t(epoch_.order.size()));
}

int64_t PackedDocuments::samplesPerEpoch() const { return counts_[0]; }

std::string PackedDocuments::describe() const {
  std::string text =
      "Megatron dataset " + tokens_.prefix() + ": " +
      std::to_string(tokens_.numDocuments()) + " documents, " +
      std::to_string(tokens_.numElements()) + " tokens (" +
      indexedDTypeName(uint8_t(tokens_.dtype())) + ")" +
      (mask_ ? ", loss mask " + mask_->prefix() : std::string()) +
      ", whole documents packed into " + std::to_string(counts_[0]) +
      " samples of " + std::to_string(o_.seq + 1) + " tokens";
  if (cut_)
    text += " (" + std::to_string(cut_) + " longer documents cut to " +
            std::to_string(o_.seq + 1) + " tokens)";
  if (dropped_)
    text += " (" + std::to_string(dropped_) +
            " documents of fewer than 2 tokens left out)";
  return text + (o_.shuffle ? ", shuffled per epoch" : "");
}

Status PackedDocuments::sample(int64_t index, int32_t *tokens, float *weights,
                               int32_t *segments) {
  // The epoch holding `index`: epochs hold different numbers of samples, so
  // they are counted from the first (one pass over the lengths each).
  int64_t e = 0, first = 0;
  for (;; first += counts_[size_t(e++)]) {
    if (e == int64_t(counts_.size())) {
      pack(e);
      counts_.push_back(int64_t(epoch_.starts.size()) - 1);
    }
    if (index < first + counts_[size_t(e)])
      break;
  }
  if (epoch_.index != e)
    pack(e);
  int64_t j = index - first, n = o_.seq + 1;
  std::fill(tokens, tokens + n, 0);
  std::fill(weights, weights + o_.seq, 0.0f);
  std::fill(segments, segments + o_.seq, 0); // padding: a segment of its own
  int64_t at = 0;
  int32_t segment = 0;
  for (int64_t k = epoch_.starts[size_t(j)]; k < epoch_.starts[size_t(j) + 1];
       ++k) {
    int64_t doc = epoch_.order[size_t(k)], length = usable(doc);
    if (!length)
      continue;
    tokenBuf_.resize(size_t(length));
    maskBuf_.resize(size_t(length));
    int64_t *mask = mask_ ? maskBuf_.data() : nullptr;
    tokens_.readDocument(doc, 0, length, tokenBuf_.data());
    if (mask)
      mask_->readDocument(doc, 0, length, mask);
    INFIR2_RETURN_IF_ERROR(checkDocument(tokens_, mask_, doc, tokenBuf_.data(),
                                         mask, length, o_.vocab));
    ++segment;
    for (int64_t i = 0; i < length; ++i)
      tokens[at + i] = int32_t(tokenBuf_[size_t(i)]);
    for (int64_t i = 0; i < length && at + i < o_.seq; ++i)
      segments[at + i] = segment;
    // Input at + i predicts token at + i + 1 of the same document; the
    // target after the document's last token belongs to another and weighs 0.
    for (int64_t i = 0; i + 1 < length; ++i)
      weights[at + i] = mask ? float(mask[i + 1]) : 1.0f;
    at += length;
  }
  return Status::ok();
}
