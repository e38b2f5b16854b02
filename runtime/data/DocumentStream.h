//===- DocumentStream.h - Samples from an indexed dataset -------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Samples as Megatron-LM's GPT datasets cut them: each epoch puts the
// dataset's documents in an order of its own (a Fisher-Yates shuffle driven
// by std::mt19937_64 seeded with the seed and the epoch; in file order
// without shuffling), the epochs follow one another as one token stream,
// and sample i is the seq+1 tokens from token i·seq on (consecutive samples
// share one token: the last target of one is the first input of the next).
// Samples may span documents and epochs. A mask dataset beside the tokens
// (P.mask, the same documents, 0/1 per token) gives each target's loss
// weight: an SFT sample trains on the assistant's tokens only.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DATA_DOCUMENTSTREAM_H
#define INFIR2_RUNTIME_DATA_DOCUMENTSTREAM_H

#include "DataSource.h"

#include "infir2/runtime/IndexedDataset.h"

#include <map>
#include <optional>

namespace infir2::rt {

/// The order of `n` documents in epoch `epoch`: a Fisher-Yates shuffle with
/// std::mt19937_64 seeded from `seed` and the epoch, or file order.
std::vector<int64_t> documentOrder(int64_t n, uint64_t seed, int64_t epoch,
                                   bool shuffle);

/// Checks that `mask`, when given, has the documents of `tokens`, each as
/// long.
Status checkMaskMatches(const IndexedDataset &tokens,
                        const std::optional<IndexedDataset> &mask);

/// Checks `n` tokens (and mask values, when `mask` is given) read from
/// document `doc`: ids below `vocab`, masks 0 or 1.
Status checkDocument(const IndexedDataset &tokens,
                     const std::optional<IndexedDataset> &maskData, int64_t doc,
                     const int64_t *ids, const int64_t *mask, int64_t n,
                     int64_t vocab);

class DocumentStream : public TokenSource {
public:
  /// Checks that `mask`, when given, has the documents of `tokens`, and
  /// that the data holds at least one sample.
  static Expected<std::unique_ptr<DocumentStream>>
  create(IndexedDataset tokens, std::optional<IndexedDataset> mask,
         const SourceOptions &options);

  Status sample(int64_t index, int32_t *tokens, float *weights,
                int32_t *segments) override;
  int64_t samplesPerEpoch() const override;
  std::string describe() const override;
  bool masked() const override { return mask_.has_value(); }

private:
  DocumentStream(IndexedDataset tokens, std::optional<IndexedDataset> mask,
                 const SourceOptions &options);

  /// One epoch's document order and where each document starts in it.
  struct Epoch {
    std::vector<int64_t> order, starts; ///< starts: numDocuments + 1
  };
  const Epoch &epoch(int64_t e);
  /// Copies `n` tokens (and mask values) from token `offset` of the stream.
  Status read(int64_t offset, int64_t n, int64_t *tokens, int64_t *mask);

  IndexedDataset tokens_;
  std::optional<IndexedDataset> mask_;
  SourceOptions o_;
  int64_t total_ = 0;               ///< tokens per epoch
  std::map<int64_t, Epoch> epochs_; ///< the few epochs in use
  std::vector<int64_t> tokenBuf_, maskBuf_;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DATA_DOCUMENTSTREAM_H
