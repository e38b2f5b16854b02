//===- Fp8StatsTest.cpp - One quantization's statistics -------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// quantizationStats (runtime/driver/device/Fp8Stats.h) on hand-made
// quantizations whose counts are written out here: the codes are E4M3 bytes
// by the format's definition (0x38 is 1.0, 0x7e is 448, 0x00 is +0), and
// each case puts its saturated or flushed value in a block whose scale is
// the only one that makes it so, so that a wrong block index is a wrong
// count. The trainer's statistics against the reference interpreter's are
// fp8-stats.test.
//
//===----------------------------------------------------------------------===//

#include "device/Fp8Stats.h"

#include <gtest/gtest.h>

using infir2::rt::quantizationStats;
using infir2::rt::QuantizationStats;

namespace {

// [2, 2, 4] in 1 x 1 x 2 groups: 8 scales, row-major over [2, 2, 2].
TEST(Fp8Stats, GroupsOfTheLastDimension) {
  std::vector<float> x(16, 1.0f);
  std::vector<uint8_t> codes(16, 0x38);
  std::vector<float> scales(8, 1.0f);
  // Element [1, 0, 3] (flat 11) is in group [1, 0, 1] (flat 5): with that
  // group's scale 1/1024, 1.0 scales to 1024 > 448, saturated (code 448).
  scales[5] = 1.0f / 1024;
  codes[11] = 0x7e;
  codes[10] = 0x7e; // its neighbour in the group: 1.0 * 1024 too
  // Element [0, 1, 0] (flat 4), 1e-9, is flushed to zero with scale 1.
  x[4] = 1e-9f;
  codes[4] = 0x00;
  x[15] = 0.0f; // a zero is neither
  codes[15] = 0x00;
  x[2] = -3.0f;
  QuantizationStats s = quantizationStats(x.data(), {2, 2, 4}, codes.data(),
                                          scales.data(), {1, 1, 2},
                                          /*e5m2=*/false, /*transposed=*/false);
  EXPECT_EQ(s.numel, 16);
  EXPECT_EQ(s.nonzero, 15);
  EXPECT_EQ(s.saturated, 2);
  EXPECT_EQ(s.flushed, 1);
  EXPECT_EQ(s.amax, 3.0);
  EXPECT_EQ(s.scaleMin, 1.0 / 1024);
  EXPECT_EQ(s.scaleMax, 1.0);
  EXPECT_EQ(s.shape, (std::vector<int64_t>{2, 2, 4}));
}

// 128 x 128 blocks of a [3, 260] matrix: 1 x 3 blocks, the last ragged.
TEST(Fp8Stats, RaggedBlocks) {
  std::vector<float> x(3 * 260, 0.5f);
  std::vector<uint8_t> codes(3 * 260, 0x30);
  std::vector<float> scales = {1.0f, 1.0f, 1.0f / 4096};
  // Column 259 (the third block, 4 wide): 0.5 * 4096 > 448 on all 3 rows.
  QuantizationStats s =
      quantizationStats(x.data(), {3, 260}, codes.data(), scales.data(),
                        {128, 128}, false, false);
  EXPECT_EQ(s.saturated, 3 * 4);
  EXPECT_EQ(s.flushed, 0);
}

// quantize_dual's second layout: x [T=4, K=3] read as its [3, 4] transpose
// in 1 x 2 groups along T: scale (k, t / 2).
TEST(Fp8Stats, TheTransposedLayout) {
  std::vector<float> x(12, 2.0f);
  std::vector<uint8_t> codes(12, 0x40); // 2.0
  std::vector<float> scales(6, 1.0f);
  // x[3, 1] is code [1, 3], in group (1, 1): scale index 1 * 2 + 1 = 3.
  scales[3] = 1.0f / 512; // x[2, 1] and x[3, 1]: 2 * 512 > 448
  x[1] = 1e-8f;           // x[0, 1], group (1, 0), scale 1: flushed
  codes[1 * 4 + 0] = 0x00;
  // Zeros where the transposed index would be read as the direct one
  // ((t / 2) * 3 + k = 3: x[2, 0] and x[3, 0]), so that mistake counts 0.
  x[2 * 3 + 0] = x[3 * 3 + 0] = 0.0f;
  codes[0 * 4 + 2] = codes[0 * 4 + 3] = 0x00;
  QuantizationStats s =
      quantizationStats(x.data(), {4, 3}, codes.data(), scales.data(), {1, 2},
                        false, /*transposed=*/true);
  EXPECT_EQ(s.shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(s.saturated, 2);
  EXPECT_EQ(s.flushed, 1);
  EXPECT_EQ(s.nonzero, 10);
}

// E5M2 holds up to 57344: 1000 with scale 1 is not saturated there.
TEST(Fp8Stats, TheFormatsLargestValue) {
  float x[2] = {1000.0f, 60000.0f};
  uint8_t codes[2] = {0x63, 0x7b};
  float scale = 1.0f;
  QuantizationStats s =
      quantizationStats(x, {2}, codes, &scale, {2}, /*e5m2=*/true, false);
  EXPECT_EQ(s.saturated, 1);
}

} // namespace
