//===- DataSource.h - Training data as sequences ----------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Where the trainer's sequences come from. --data (and --eval-data) names
// one of:
//   - a Megatron-LM indexed dataset by its prefix P (P.bin + P.idx, or
//     either file's name), with P.mask.bin/.idx beside it for SFT loss
//     masks (DocumentStream.h);
//   - a blend "W1 P1 W2 P2 ...", mixed as Megatron-LM's --data-path mixes
//     them (Blend.h);
//   - a file of raw token ids (.u16, .u32, or --data-format u16|u32) or of
//     UTF-8 text, one token per byte.
// Anything else (an index under another name, a .bin without its .idx,
// binary data taken for text) is refused by name. Every source yields
// numbered samples of seq+1 tokens with a loss weight per target and a
// segment id per input; the trainer's data position is the number of
// samples its group consumed.
//
// A dataset is cut into samples in one of two ways (--packing):
//   - stream: its documents follow one another as one token stream cut
//     every seq tokens, one segment per sample (Megatron-LM's GPT datasets;
//     continual pre-training);
//   - documents: whole documents packed into samples, each its own segment
//     (PackedDocuments.h; SFT, the default when a loss mask is given).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DATA_DATASOURCE_H
#define INFIR2_RUNTIME_DATA_DATASOURCE_H

#include "infir2/runtime/Choices.h"
#include "infir2/runtime/Expected.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace infir2::rt {

/// --data-format: how a raw token file is read.
enum class DataFormat { Auto, Text, U16, U32 };
template <> struct Choices<DataFormat> {
  static constexpr const char *flag = "--data-format";
  static constexpr Spelling<DataFormat> spellings[] = {
      {DataFormat::Auto, "auto"},
      {DataFormat::Text, "text"},
      {DataFormat::U16, "u16"},
      {DataFormat::U32, "u32"}};
};

/// --packing: how a dataset becomes samples.
enum class Packing { Auto, Documents, Stream };
template <> struct Choices<Packing> {
  static constexpr const char *flag = "--packing";
  static constexpr Spelling<Packing> spellings[] = {
      {Packing::Auto, "auto"},
      {Packing::Documents, "documents"},
      {Packing::Stream, "stream"}};
};

/// Numbered training samples.
class TokenSource {
public:
  virtual ~TokenSource();
  /// Sample `index`: `tokens` gets seq+1 ids (the inputs, then shifted by
  /// one the targets), `weights` seq loss weights, one per target, and
  /// `segments` seq segment ids, one per input: an input attends only to
  /// inputs of its segment and counts its position from the segment's start.
  virtual Status sample(int64_t index, int32_t *tokens, float *weights,
                        int32_t *segments) = 0;
  /// Samples in one pass over the data.
  virtual int64_t samplesPerEpoch() const = 0;
  /// What it is, for the start-up line ("Megatron dataset P: 1200
  /// documents, 1.5M tokens, uint16").
  virtual std::string describe() const = 0;
  /// Whether some targets may weigh other than 1 (SFT loss masks).
  virtual bool masked() const { return false; }
  /// Whether samples may hold several segments (packed documents).
  virtual bool packed() const { return false; }
};

/// How a source is read: the model's sequence length and vocabulary, the
/// seed of the per-epoch document shuffle (none for held-out data).
struct SourceOptions {
  int64_t seq = 0, vocab = 0;
  uint64_t seed = 0;
  bool shuffle = true;
  DataFormat format = DataFormat::Auto; ///< --data-format, for raw files
  /// --packing: stream, documents, or auto (documents when the dataset has a
  /// loss mask, else stream).
  Packing packing = Packing::Auto;
  /// --loss-mask: the mask dataset's prefix; "" finds P.mask beside P.
  std::string lossMask;
};

/// Opens --data's value `spec` (see the file comment).
Expected<std::unique_ptr<TokenSource>> openTokenSource(const std::string &spec,
                                                       const SourceOptions &o);

/// The format `auto` means for a raw file `path`: u16 for .u16, u32 for
/// .u32, else text. Other formats are returned as given.
DataFormat resolveDataFormat(const std::string &path, DataFormat format);

/// The tokens of `bytes` in `format` (auto is resolved by `path`'s name).
/// `path` names the source in messages.
Expected<std::vector<uint32_t>> decodeTokens(const std::string &path,
                                             const std::string &bytes,
                                             DataFormat format);

/// Reads a whole raw token file and checks it: every id below `vocab`, and
/// at least `minTokens` of them.
Expected<std::vector<uint32_t>> readTokens(const std::string &path,
                                           DataFormat format, int64_t vocab,
                                           int64_t minTokens);

/// One micro-batch's inputs, batch x seq each.
struct Batch {
  int32_t *ids, *targets;
  float *weights;
  int32_t *positions, *segments; ///< positions restart at each segment
};

/// Fills `out` with the next micro-batch from `source` at `position` (the
/// samples the group has consumed, advanced). A group of `ranks` reads
/// ranks·batch consecutive samples and rank `rank` takes its `batch`, so that
/// R ranks of micro-batch B see exactly what one process of micro-batch R·B
/// would.
Status fillSequences(TokenSource &source, int64_t &position, int64_t batch,
                     int64_t seq, int ranks, int rank, const Batch &out);

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DATA_DATASOURCE_H
