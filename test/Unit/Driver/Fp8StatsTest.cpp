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

#include "../Runtime/DescriptorBuilder.h"

#include "infir2/runtime/Error.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

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
  EXPECT_EQ(s.maxScaled, 1024.0); // 1.0 in the group of scale 1/1024
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

// Saturated means rounded beyond the largest finite value: in E4M3 (448,
// next step 480) from above the midpoint 464 (a tie rounds to 448, even); in
// E5M2 (57344, next 65536) from the midpoint 61440 on (a tie rounds up).
TEST(Fp8Stats, TheFormatsLargestValue) {
  float e4m3[4] = {448.0f, 460.0f, 464.0f, 470.0f};
  uint8_t codes4[4] = {0x7e, 0x7e, 0x7e, 0x7e};
  float scale = 1.0f;
  QuantizationStats s =
      quantizationStats(e4m3, {4}, codes4, &scale, {4}, false, false);
  EXPECT_EQ(s.saturated, 1);
  EXPECT_EQ(s.maxScaled, 470.0);
  float e5m2[4] = {1000.0f, 57344.0f, 60000.0f, 61440.0f};
  uint8_t codes5[4] = {0x63, 0x7b, 0x7b, 0x7b};
  s = quantizationStats(e5m2, {4}, codes5, &scale, {4}, /*e5m2=*/true, false);
  EXPECT_EQ(s.saturated, 1);
}

} // namespace

namespace {

/// A GPU's read-back that finds a quantizer's refusal: INFIR2RT_NONFINITE,
/// and "where: message" as Device.cu's download writes it.
int32_t refusingDownload(void *, const void *, int64_t, void *, char *why,
                         int64_t whySize) {
  std::snprintf(why, size_t(whySize), "%s",
                "fp8.quantize at m.mlir:3:4: non-finite amax (inf) in scale "
                "block 0: refusing to quantize it");
  return INFIR2RT_NONFINITE;
}

int32_t quantizedNothing(infir2rt_context *, const int64_t *, const char *) {
  return 0;
}

// On a GPU, a quantizer's refusal surfaces at the first read-back, which on
// a logged step is the recorder's: it stays the step's refusal
// (INFIR2RT_NONFINITE, its message whole), so that the trainer skips the
// step as without statistics.
TEST(Fp8Stats, AGpuRefusalStaysTheSteps) {
  infir2rt_backend gpu = *infir2rt_cpu_backend();
  gpu.host_memory = 0;
  gpu.download = refusingDownload;
  gpu.entries[INFIR2RT_ENTRY_quantize] = quantizedNothing;
  infir2::rt::Manifest manifest;
  infir2::rt::Fp8StatsRecorder recorder(&gpu, manifest);
  recorder.start(1);
  recorder.enter("train_step");
  infir2::test::Call c;
  c.add({2, 4}, INFIR2RT_F32);
  c.add({2, 4}, INFIR2RT_E4M3);
  c.add({2, 1}, INFIR2RT_F32);
  c.attrs({0, 1, 1, 4}); // format e4m3, pow2, block [1, 4]
  infir2rt_context ctx{};
  ctx.regions[0] = ctx.regions[1] = c.host.data();
  EXPECT_EQ(recorder.backend()->entries[INFIR2RT_ENTRY_quantize](
                &ctx, c.desc.data(), "fp8.quantize at m.mlir:3:4"),
            INFIR2RT_NONFINITE);
  EXPECT_EQ(infir2::rt::callError(ctx),
            "fp8.quantize at m.mlir:3:4: non-finite amax (inf) in scale block "
            "0: refusing to quantize it");
  EXPECT_EQ(recorder.pending(), 0u);
}

} // namespace
