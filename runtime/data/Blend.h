//===- Blend.h - Weighted mixtures of token sources -------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// --data "0.7 P1 0.3 P2": samples drawn from several sources in proportion
// to their weights, as Megatron-LM's BlendedDataset draws them
// (build_blending_indices): the weights are normalized to sum to 1, and
// sample i comes from the source whose share lags most, the first d
// maximizing w_d·max(i, 1) − (samples taken from d so far), which takes its
// next sample. Deterministic, so a resumed run continues the same mixture.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DATA_BLEND_H
#define INFIR2_RUNTIME_DATA_BLEND_H

#include "DataSource.h"

namespace infir2::rt {

class Blend : public TokenSource {
public:
  /// `weights` positive and finite, one per source.
  Blend(std::vector<double> weights,
        std::vector<std::unique_ptr<TokenSource>> sources);

  Status sample(int64_t index, int32_t *tokens, float *weights,
                int32_t *segments) override;
  int64_t samplesPerEpoch() const override;
  std::string describe() const override;
  bool masked() const override;
  bool packed() const override;

  /// The source and its own sample index that global sample `index` maps
  /// to.
  std::pair<size_t, int64_t> locate(int64_t index);

private:
  std::vector<double> weights_; ///< normalized
  std::vector<std::unique_ptr<TokenSource>> sources_;
  /// The assignment's state after `next_` samples: each source's count.
  int64_t next_ = 0;
  std::vector<int64_t> taken_;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DATA_BLEND_H
