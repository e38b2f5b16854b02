//===- PackedDocuments.h - Whole documents packed into samples --*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// --packing documents (the default for SFT data, which has a loss mask):
// each epoch puts the documents in its own order (documentOrder, as the
// token stream does), then fills samples of seq+1 tokens with whole
// documents in that order, starting a new sample when the next document does
// not fit and padding the rest (token 0, weight 0, a segment of its own).
// Each document is its own segment: it attends only to itself, its
// positions start at 0, and the target after its last token (the next
// document's first, or padding) weighs 0. So a document's loss terms and
// gradient are exactly those it has trained alone in a sample.
//
// A document longer than seq+1 tokens is cut to its first seq+1 (its tail is
// not trained on); one of fewer than 2 tokens has no target and is left out.
// Both are counted and reported at start.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DATA_PACKEDDOCUMENTS_H
#define INFIR2_RUNTIME_DATA_PACKEDDOCUMENTS_H

#include "DataSource.h"

#include "infir2/runtime/IndexedDataset.h"

#include <optional>

namespace infir2::rt {

class PackedDocuments : public TokenSource {
public:
  /// Checks that `mask`, when given, has the documents of `tokens`, and that
  /// at least one document has a target.
  static Expected<std::unique_ptr<PackedDocuments>>
  create(IndexedDataset tokens, std::optional<IndexedDataset> mask,
         const SourceOptions &options);

  Status sample(int64_t index, int32_t *tokens, float *weights,
                int32_t *segments) override;
  int64_t samplesPerEpoch() const override;
  std::string describe() const override;
  bool masked() const override { return mask_.has_value(); }
  bool packed() const override { return true; }

private:
  PackedDocuments(IndexedDataset tokens, std::optional<IndexedDataset> mask,
                  const SourceOptions &options);

  /// One epoch's samples: the documents in order, and where each sample's
  /// documents begin in it.
  struct Epoch {
    int64_t index = -1;
    std::vector<int64_t> order, starts; ///< starts: samples + 1
  };
  /// Packs epoch `e` into `epoch_`.
  void pack(int64_t e);
  /// The tokens document `doc` contributes (cut to seq+1); 0 if none.
  int64_t usable(int64_t doc) const;

  IndexedDataset tokens_;
  std::optional<IndexedDataset> mask_;
  SourceOptions o_;
  int64_t cut_ = 0, dropped_ = 0;
  std::vector<int64_t> counts_; ///< samples in each epoch counted so far
  Epoch epoch_;                 ///< the epoch last packed
  std::vector<int64_t> tokenBuf_, maskBuf_;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DATA_PACKEDDOCUMENTS_H
