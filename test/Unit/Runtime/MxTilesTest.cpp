//===- MxTilesTest.cpp - MXFP8 scale tiles against to_blocked -------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The tiled layout cuBLASLt reads MX scales in (MxTiles.h, used by the CUDA
// GEMM's layout kernel), checked on the CPU against a transcription of
// torchao's to_blocked (the rearrangement PyTorch's MX GEMMs feed cuBLAS,
// written from cuBLAS's "1D block scaling factors layout"): pad to
// multiples of 128 rows and 4 columns, view as (row blocks, 128, column
// blocks, 4), permute to (row blocks, column blocks, 128, 4), view as
// (-1, 4, 32, 4), swap the middle dimensions, flatten. Shapes with and
// without each padding; every byte compared, padding included.
//
//===----------------------------------------------------------------------===//

#include "MxTiles.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

/// to_blocked's output as source indices r·S + c (-1 for padding).
std::vector<int64_t> toBlocked(int64_t rows, int64_t S) {
  int64_t nrb = (rows + 127) / 128, ncb = (S + 3) / 4;
  // The padded matrix, permuted to (nrb, ncb, 128, 4), flattened.
  std::vector<int64_t> permuted;
  for (int64_t rb = 0; rb < nrb; ++rb)
    for (int64_t cb = 0; cb < ncb; ++cb)
      for (int64_t r = 0; r < 128; ++r)
        for (int64_t c = 0; c < 4; ++c) {
          int64_t row = rb * 128 + r, col = cb * 4 + c;
          permuted.push_back(row < rows && col < S ? row * S + col : -1);
        }
  // Viewed as (-1, 4, 32, 4), transposed to (-1, 32, 4, 4), flattened.
  std::vector<int64_t> out(permuted.size());
  for (int64_t t = 0; t < int64_t(permuted.size()) / 512; ++t)
    for (int64_t a = 0; a < 4; ++a)
      for (int64_t b = 0; b < 32; ++b)
        for (int64_t c = 0; c < 4; ++c)
          out[t * 512 + b * 16 + a * 4 + c] =
              permuted[t * 512 + a * 128 + b * 4 + c];
  return out;
}

TEST(MxTiles, MatchToBlocked) {
  // Rows a multiple of 128 or not; S = K / 32 a multiple of 4 or not.
  for (auto [rows, S] : {std::pair<int64_t, int64_t>{256, 16},
                         {300, 7},
                         {128, 4},
                         {1, 1},
                         {160, 9},
                         {384, 28}}) {
    SCOPED_TRACE(testing::Message() << rows << " x " << S);
    std::vector<int64_t> want = toBlocked(rows, S);
    ASSERT_EQ(int64_t(want.size()), infir2::rt::cuda::mxTiledBytes(rows, S));
    int64_t bad = 0;
    for (int64_t t = 0; t < int64_t(want.size()); ++t)
      bad += infir2::rt::cuda::mxTiledSource(t, rows, S) != want[t];
    EXPECT_EQ(bad, 0);
  }
}

} // namespace
