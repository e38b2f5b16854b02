//===- data-source.cpp - Fuzzes the training data readers -----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The input's first byte picks what the rest is, as --data would name it:
// a raw file (its extension: .txt, .u16, .u32, or a .bin without an index),
// or a Megatron-LM indexed dataset (two length bytes, that many bytes of
// P.idx, the rest P.bin), alone or with itself as its P.mask, shuffled or
// not. Whatever openTokenSource accepts is cut into micro-batches by
// fillSequences, as two data-parallel ranks would, past the data's end.
//
//===----------------------------------------------------------------------===//

#include "DataSource.h"
#include "FuzzSupport.h"

#include <filesystem>
#include <vector>

using namespace infir2::rt;

namespace {

/// Writes `size` bytes as a dataset: P.idx (the length in the first two
/// bytes), P.bin the rest. Returns P.
std::string writeDataset(const uint8_t *data, size_t size, bool withMask) {
  size_t idxBytes = size < 2 ? 0 : std::min(size - 2, size_t(data[0] | data[1] << 8));
  const uint8_t *idx = data + std::min<size_t>(size, 2);
  const uint8_t *bin = idx + idxBytes;
  size_t binBytes = size - size_t(bin - data);
  std::string path = infir2::fuzz::writeInput(idx, idxBytes, ".ds.idx");
  infir2::fuzz::writeInput(bin, binBytes, ".ds.bin");
  std::string prefix = path.substr(0, path.size() - 4);
  std::error_code ec;
  if (withMask) {
    infir2::fuzz::writeInput(idx, idxBytes, ".ds.mask.idx");
    infir2::fuzz::writeInput(bin, binBytes, ".ds.mask.bin");
  } else {
    std::filesystem::remove(prefix + ".mask.idx", ec);
  }
  return prefix;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const kSuffixes[] = {".txt", ".u16", ".u32", ".bin"};
  if (size == 0)
    return 0;
  uint8_t kind = data[0] % 7;
  std::string path =
      kind < 4 ? infir2::fuzz::writeInput(data + 1, size - 1, kSuffixes[kind])
               : writeDataset(data + 1, size - 1, /*withMask=*/kind >= 5);
  constexpr int64_t kBatch = 2, kSeq = 4;
  SourceOptions options;
  options.seq = kSeq;
  options.vocab = 1 << 16;
  options.shuffle = kind == 6;
  options.packing =
      kind == 5 ? Packing::Stream : Packing::Auto; // 6: packed documents
  Expected<std::unique_ptr<TokenSource>> source =
      openTokenSource(path, options);
  if (!source)
    return 0;
  std::vector<int32_t> ids(kBatch * kSeq), targets(kBatch * kSeq);
  std::vector<float> weights(kBatch * kSeq);
  std::vector<int32_t> positions(kBatch * kSeq), segments(kBatch * kSeq);
  Batch batch{ids.data(), targets.data(), weights.data(), positions.data(),
              segments.data()};
  int64_t position = 0;
  for (int step = 0; step < 8; ++step)
    for (int rank = 0; rank < 2; ++rank) {
      int64_t at = position;
      if (!fillSequences(**source, at, kBatch, kSeq, /*ranks=*/2, rank, batch))
        return 0;
      if (rank == 1)
        position = at;
    }
  return 0;
}
