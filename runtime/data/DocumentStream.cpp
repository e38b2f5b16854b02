//===- DocumentStream.cpp - Samples from an indexed dataset ---------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "DocumentStream.h"

#include <algorithm>
#include <numeric>
#include <random>

using namespace infir2::rt;

std::vector<int64_t> infir2::rt::documentOrder(int64_t n, uint64_t seed,
                                               int64_t epoch, bool shuffle) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t(0));
  if (shuffle) {
    // Fisher-Yates with std::mt19937_64, whose output the standard fixes
    // (std::shuffle's use of it is the library's choice): the same order on
    // every machine, so a resumed run reads what the first would have.
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + uint64_t(epoch) + 1);
    for (int64_t i = n - 1; i > 0; --i)
      std::swap(order[size_t(i)], order[size_t(rng() % uint64_t(i + 1))]);
  }
  return order;
}

Status infir2::rt::checkMaskMatches(const IndexedDataset &tokens,
                                    const std::optional<IndexedDataset> &mask) {
  if (!mask)
    return Status::ok();
  if (mask->numDocuments() != tokens.numDocuments())
    return fail("%s: %lld documents, but %s has %lld", mask->prefix().c_str(),
                (long long)mask->numDocuments(), tokens.prefix().c_str(),
                (long long)tokens.numDocuments());
  for (int64_t d = 0; d < tokens.numDocuments(); ++d)
    if (mask->documentLength(d) != tokens.documentLength(d))
      return fail("%s: document %lld has %lld mask values for %lld tokens",
                  mask->prefix().c_str(), (long long)d,
                  (long long)mask->documentLength(d),
                  (long long)tokens.documentLength(d));
  return Status::ok();
}

Status infir2::rt::checkDocument(const IndexedDataset &tokens,
                                 const std::optional<IndexedDataset> &maskData,
                                 int64_t doc, const int64_t *ids,
                                 const int64_t *mask, int64_t n,
                                 int64_t vocab) {
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= vocab)
      return fail("%s: document %lld holds token %lld, outside the model's "
                  "vocabulary of %lld",
                  tokens.prefix().c_str(), (long long)doc, (long long)ids[i],
                  (long long)vocab);
    if (mask && mask[i] != 0 && mask[i] != 1)
      return fail("%s: document %lld holds mask value %lld (0 or 1 expected)",
                  maskData->prefix().c_str(), (long long)doc,
                  (long long)mask[i]);
  }
  return Status::ok();
}

DocumentStream::DocumentStream(IndexedDataset tokens,
                               std::optional<IndexedDataset> mask,
                               const SourceOptions &options)
    : tokens_(std::move(tokens)), mask_(std::move(mask)), o_(options),
      total_(tokens_.numElements()) {}

Expected<std::unique_ptr<DocumentStream>>
DocumentStream::create(IndexedDataset tokens,
                       std::optional<IndexedDataset> mask,
                       const SourceOptions &options) {
  INFIR2_RETURN_IF_ERROR(checkMaskMatches(tokens, mask));
  if (tokens.numElements() < options.seq + 1)
    return fail("%s: %lld tokens, fewer than one sequence needs (%lld)",
                tokens.prefix().c_str(), (long long)tokens.numElements(),
                (long long)(options.seq + 1));
  return std::unique_ptr<DocumentStream>(
      new DocumentStream(std::move(tokens), std::move(mask), options));
}

int64_t DocumentStream::samplesPerEpoch() const {
  return std::max<int64_t>(1, (total_ - 1) / o_.seq);
}

std::string DocumentStream::describe() const {
  return "Megatron dataset " + tokens_.prefix() + ": " +
         std::to_string(tokens_.numDocuments()) + " documents, " +
         std::to_string(total_) + " tokens (" +
         indexedDTypeName(uint8_t(tokens_.dtype())) + ")" +
         (mask_ ? ", loss mask " + mask_->prefix() : std::string()) +
         (o_.shuffle ? ", shuffled per epoch" : "");
}

const DocumentStream::Epoch &DocumentStream::epoch(int64_t e) {
  if (auto it = epochs_.find(e); it != epochs_.end())
    return it->second;
  // A sample spans at most two epochs: older ones are not needed again.
  while (epochs_.size() > 1)
    epochs_.erase(epochs_.begin());
  Epoch &ep = epochs_[e];
  int64_t n = tokens_.numDocuments();
  ep.order = documentOrder(n, o_.seed, e, o_.shuffle);
  ep.starts.assign(size_t(n) + 1, 0);
  for (int64_t k = 0; k < n; ++k)
    ep.starts[size_t(k) + 1] =
        ep.starts[size_t(k)] + tokens_.documentLength(ep.order[size_t(k)]);
  return ep;
}

Status DocumentStream::read(int64_t offset, int64_t n, int64_t *tokens,
                            int64_t *mask) {
  while (n > 0) {
    int64_t e = offset / total_, within = offset % total_;
    const Epoch &ep = epoch(e);
    // The document holding token `within` (empty documents are skipped).
    int64_t k = std::upper_bound(ep.starts.begin(), ep.starts.end(), within) -
                ep.starts.begin() - 1;
    int64_t doc = ep.order[size_t(k)], from = within - ep.starts[size_t(k)];
    int64_t take = std::min(n, tokens_.documentLength(doc) - from);
    tokens_.readDocument(doc, from, take, tokens);
    if (mask)
      mask_->readDocument(doc, from, take, mask);
    INFIR2_RETURN_IF_ERROR(
        checkDocument(tokens_, mask_, doc, tokens, mask, take, o_.vocab));
    offset += take;
    tokens += take;
    if (mask)
      mask += take;
    n -= take;
  }
  return Status::ok();
}

Status DocumentStream::sample(int64_t index, int32_t *tokens, float *weights,
                              int32_t *segments) {
  std::fill(segments, segments + o_.seq, 0); // one stream, one segment
  int64_t n = o_.seq + 1;
  tokenBuf_.resize(size_t(n));
  maskBuf_.resize(size_t(n));
  INFIR2_RETURN_IF_ERROR(read(index * o_.seq, n, tokenBuf_.data(),
                              mask_ ? maskBuf_.data() : nullptr));
  for (int64_t t = 0; t < n; ++t)
    tokens[t] = int32_t(tokenBuf_[size_t(t)]);
  // Target t is token t + 1: its mask value is its weight.
  for (int64_t t = 0; t < o_.seq; ++t)
    weights[t] = mask_ ? float(maskBuf_[size_t(t) + 1]) : 1.0f;
  return Status::ok();
}
