//===- Transpose.h - Cache-friendly transposes ------------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Internal to the CPU backend: the tiled transpose of the last two
// dimensions, shared by transpose and quantize_dual.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CPU_TRANSPOSE_H
#define INFIR2_RUNTIME_CPU_TRANSPOSE_H

#include <algorithm>
#include <cstdint>

namespace infir2::rt::cpu {

/// out[p][j][i] = in[p][i][j] for `batch` matrices of rows x cols elements
/// of T, in 32 x 32 tiles so that reads and writes both stay in cache.
template <typename T>
void transposeLastTwo(const T *in, T *out, int64_t batch, int64_t rows,
                      int64_t cols) {
  constexpr int64_t kTile = 32;
  int64_t tilesR = (rows + kTile - 1) / kTile, tilesC = (cols + kTile - 1) / kTile;
#pragma omp parallel for collapse(2) if (batch * rows * cols > 65536)
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t tr = 0; tr < tilesR; ++tr) {
      const T *a = in + p * rows * cols;
      T *b = out + p * rows * cols;
      for (int64_t tc = 0; tc < tilesC; ++tc)
        for (int64_t i = tr * kTile, ie = std::min(rows, i + kTile); i < ie; ++i)
          for (int64_t j = tc * kTile, je = std::min(cols, j + kTile); j < je;
               ++j)
            b[j * rows + i] = a[i * cols + j];
    }
}

} // namespace infir2::rt::cpu

#endif // INFIR2_RUNTIME_CPU_TRANSPOSE_H
