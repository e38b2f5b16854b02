//===- data-source.cpp - Fuzzes the training data readers -----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The input's first byte picks the file name's extension (so the format
// `auto` resolves to), the rest is the data file, read by readTokens as the
// trainer reads --data. Accepted tokens are cut into micro-batches by
// fillSequences, as two data-parallel ranks would, past the data's end.
//
//===----------------------------------------------------------------------===//

#include "DataSource.h"
#include "FuzzSupport.h"

#include <vector>

using namespace infir2::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const kSuffixes[] = {".txt", ".u16", ".bin", ".u32"};
  if (size == 0)
    return 0;
  std::string path =
      infir2::fuzz::writeInput(data + 1, size - 1, kSuffixes[data[0] % 4]);
  constexpr int64_t kBatch = 2, kSeq = 4, kVocab = 1 << 16;
  Expected<std::vector<uint32_t>> tokens =
      readTokens(path, "auto", kVocab, kSeq + 1);
  if (!tokens)
    return 0;
  std::vector<int32_t> ids(kBatch * kSeq), targets(kBatch * kSeq);
  int64_t position = 0;
  for (int step = 0; step < 8; ++step)
    for (int rank = 0; rank < 2; ++rank) {
      int64_t at = position;
      fillSequences(*tokens, at, kBatch, kSeq, /*ranks=*/2, rank, ids.data(),
                    targets.data());
      if (rank == 1)
        position = at;
    }
  return 0;
}
