//===- TransposeTest.cpp - The CPU backend's tiled transposes -------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// transposeLastTwo (runtime/lib/cpu/Transpose.h) against the definition,
// out[p][j][i] = in[p][i][j], element for element: bytes (FP8 codes, the
// SSE2 16 x 16 tiles) and 32-bit words (the generic tiles), over shapes with
// whole tiles, ragged edges, single rows and columns, and a batch. Random
// bytes; the seed is printed.
//
//===----------------------------------------------------------------------===//

#include "Transpose.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

namespace {

template <typename T> void checkShapes(std::mt19937_64 &rng) {
  for (int64_t batch : {1, 3})
    for (int64_t rows : {1, 5, 16, 17, 48, 130})
      for (int64_t cols : {1, 15, 16, 33, 128, 896}) {
        SCOPED_TRACE(::testing::Message() << batch << " x " << rows << " x "
                                          << cols << ", " << sizeof(T)
                                          << "-byte elements");
        std::vector<T> in(batch * rows * cols), out(in.size());
        for (T &v : in)
          v = T(rng());
        infir2::rt::cpu::transposeLastTwo(in.data(), out.data(), batch, rows,
                                          cols);
        for (int64_t p = 0; p < batch; ++p)
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j)
              ASSERT_EQ(out[(p * cols + j) * rows + i],
                        in[(p * rows + i) * cols + j])
                  << "element [" << p << "][" << i << "][" << j << "]";
      }
}

TEST(CpuTranspose, MatchesTheDefinition) {
  uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);
  checkShapes<uint8_t>(rng);
  checkShapes<uint32_t>(rng);
}

} // namespace
