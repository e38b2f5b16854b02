//===- MxTiles.h - Where cuBLASLt reads an MX operand's scales ---*- C++
//-*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The tiled layout of VEC32_UE8M0 scales (MXFP8 on Blackwell, cuBLAS's
// "1D block scaling factors layout"): the [rows, S] row-major E8M0 scales
// (S = K / 32) padded with zeros to a multiple of 128 rows and 4 columns,
// cut into 128 x 4 tiles in row-block-major order, each tile 512 bytes
// stored as 32 lines of 16: row r of a tile at (r % 32)·16 + (r / 32)·4,
// its four scales consecutive. Host and device code (ScaleLayout.cu's
// kernel; MxTilesTest checks it against a transcription of torchao's
// to_blocked on the CPU).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_MXTILES_H
#define INFIR2_RUNTIME_CUDA_MXTILES_H

#include "infir2/runtime/HostDevice.h"

#include <cstdint>

namespace infir2::rt::cuda {

/// The bytes of the tiled scales of `rows` rows of S scales.
INFIR2_HD int64_t mxTiledBytes(int64_t rows, int64_t S) {
  return (rows + 127) / 128 * 128 * ((S + 3) / 4 * 4);
}

/// For byte `t` of the tiled layout, the index r·S + c of the row-major
/// scale it holds, or -1 for padding.
INFIR2_HD int64_t mxTiledSource(int64_t t, int64_t rows, int64_t S) {
  int64_t colTiles = (S + 3) / 4;
  int64_t tile = t / 512, at = t % 512;
  int64_t r = (tile / colTiles) * 128 + (at % 16) / 4 * 32 + at / 16;
  int64_t c = (tile % colTiles) * 4 + at % 4;
  return r < rows && c < S ? r * S + c : -1;
}

} // namespace infir2::rt::cuda

#endif // INFIR2_RUNTIME_CUDA_MXTILES_H
