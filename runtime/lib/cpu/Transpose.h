//===- Transpose.h - Cache-friendly transposes ------------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Internal to the CPU backend: the tiled transpose of the last two
// dimensions, shared by transpose and quantize_dual (bytes, FP8 codes,
// through SSE2 16 x 16 tiles).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CPU_TRANSPOSE_H
#define INFIR2_RUNTIME_CPU_TRANSPOSE_H

#include <algorithm>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

#if defined(__SSE2__)
namespace detail {
/// out[j][i] = in[i][j] for one 16 x 16 tile of bytes (rows `ldIn` and
/// `ldOut` bytes apart): four rounds of SSE2 unpacks, 8-, 16-, 32- then
/// 64-bit units, instead of 256 single-byte stores.
inline void transpose16x16(const uint8_t *in, int64_t ldIn, uint8_t *out,
                           int64_t ldOut) {
  __m128i r[16], a[16], b[16], c[16];
  for (int i = 0; i < 16; ++i)
    r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i * ldIn));
  // a[i] (i < 8): columns 0-7 of rows 2i, 2i+1, a byte of each per column;
  // a[8 + i]: columns 8-15.
  for (int i = 0; i < 8; ++i) {
    a[i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
    a[8 + i] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
  }
  // b[4g + q]: columns 4q..4q+3 of rows 4g..4g+3.
  for (int g = 0; g < 4; ++g) {
    b[4 * g + 0] = _mm_unpacklo_epi16(a[2 * g], a[2 * g + 1]);
    b[4 * g + 1] = _mm_unpackhi_epi16(a[2 * g], a[2 * g + 1]);
    b[4 * g + 2] = _mm_unpacklo_epi16(a[8 + 2 * g], a[8 + 2 * g + 1]);
    b[4 * g + 3] = _mm_unpackhi_epi16(a[8 + 2 * g], a[8 + 2 * g + 1]);
  }
  // c[8h + 2q + half]: columns 4q + 2half, +1 of rows 8h..8h+7.
  for (int h = 0; h < 2; ++h)
    for (int q = 0; q < 4; ++q) {
      c[8 * h + 2 * q] = _mm_unpacklo_epi32(b[8 * h + q], b[8 * h + 4 + q]);
      c[8 * h + 2 * q + 1] =
          _mm_unpackhi_epi32(b[8 * h + q], b[8 * h + 4 + q]);
    }
  // Column 2k (k = 2q + half) is the low halves of c[k] and c[8 + k],
  // column 2k + 1 their high halves: all 16 rows each.
  for (int k = 0; k < 8; ++k) {
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out + (2 * k) * ldOut),
                     _mm_unpacklo_epi64(c[k], c[8 + k]));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out + (2 * k + 1) * ldOut),
                     _mm_unpackhi_epi64(c[k], c[8 + k]));
  }
}
} // namespace detail

/// Bytes (FP8 codes: the transposed layout of a weight or an activation):
/// 16 x 16 tiles through SSE2, four above one another at a time so that
/// each output row gets a whole 64-byte cache line; the ragged edges one
/// byte at a time.
template <>
inline void transposeLastTwo<uint8_t>(const uint8_t *in, uint8_t *out,
                                      int64_t batch, int64_t rows,
                                      int64_t cols) {
  constexpr int64_t kTile = 16, kBand = 64;
  int64_t fullR = rows / kTile * kTile, fullC = cols / kTile * kTile;
  int64_t bands = (rows + kBand - 1) / kBand;
#pragma omp parallel for collapse(2) if (batch * rows * cols > 65536)
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t band = 0; band < bands; ++band) {
      const uint8_t *a = in + p * rows * cols;
      uint8_t *b = out + p * rows * cols;
      int64_t bandEnd = std::min(rows, (band + 1) * kBand);
      for (int64_t j0 = 0; j0 < cols; j0 += kTile)
        for (int64_t i0 = band * kBand; i0 < bandEnd; i0 += kTile) {
          if (i0 < fullR && j0 < fullC) {
            detail::transpose16x16(a + i0 * cols + j0, cols,
                                   b + j0 * rows + i0, rows);
            continue;
          }
          for (int64_t i = i0, ie = std::min(rows, i0 + kTile); i < ie; ++i)
            for (int64_t j = j0, je = std::min(cols, j0 + kTile); j < je; ++j)
              b[j * rows + i] = a[i * cols + j];
        }
    }
}
#endif

} // namespace infir2::rt::cpu

#endif // INFIR2_RUNTIME_CPU_TRANSPOSE_H
