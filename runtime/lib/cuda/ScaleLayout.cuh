//===- ScaleLayout.cuh - FP8 scales as cuBLASLt reads them ------*- CUDA
//-*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// An FP8 GEMM operand's scales, from the runtime's row-major [rows, K /
// block] to the layout of cuBLASLt's scale mode (shared/CUBLASLT.md):
// - VEC128_32F (1x128 groups along K): M-major, scale (i, kb) at kb·rows + i;
// - BLK128x128_32F (128x128 blocks): K-major, the K-block stride padded to a
//   multiple of 4, zeros in the padding;
// - VEC32_UE8M0 (MX blocks of 32 along K, E8M0): 128 x 4 tiles, row-block
//   major, each stored as 32 lines of 16 bytes (row r of a tile at
//   (r % 32)·16 + (r / 32)·4, its four scales consecutive), zeros padding
//   rows to a multiple of 128 and K / 32 to a multiple of 4;
// - SCALAR_32F (one scale per tensor): used where it is.
// And which GPUs have which mode: 128-wide blocks on Hopper, MXFP8 on
// Blackwell.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_SCALELAYOUT_CUH
#define INFIR2_RUNTIME_CUDA_SCALELAYOUT_CUH

#include "infir2/runtime/CUDA.h"
#include "infir2/runtime/Descriptor.h"

#include <cstdint>

namespace infir2::rt::cuda {

/// How cuBLASLt takes an operand's scales.
enum class ScaleMode { Scalar, Vec128, Blk128, Mx32 };

/// The mode of operand `x` with scales `scale` in blocks of `block`; false
/// when cuBLASLt has none (E8M0 scales are MX blocks' only, and theirs).
bool scaleModeOf(const DescOperand &x, const DescOperand &scale,
                 const int64_t *block, ScaleMode &mode);

/// cuBLASLt's cublasLtMatmulMatrixScale_t for a mode.
int32_t cublasScaleMode(ScaleMode mode);

/// The bytes of an operand's scales in its mode's layout, for `rows` rows
/// and K columns (0 for Scalar).
int64_t scaleLayoutBytes(ScaleMode mode, int64_t rows, int64_t K);

/// Writes `scale` in `mode`'s layout at *out (scaleLayoutBytes of them) on
/// the call's stream; for Scalar, points *out at the scale itself.
int32_t layoutScales(infir2rt_context *ctx, const char *where,
                     const DescOperand &scale, ScaleMode mode, int64_t rows,
                     int64_t K, void **out);

/// Whether this GPU has the FP8 GEMM mode: MXFP8 (`mx`) on Blackwell
/// (compute capability 10.0), 128-wide block scales on Hopper (9.0), the
/// two the backend is built for (Device.cu); else an error naming the GPU
/// and the granularity it takes.
int32_t requireArchitecture(infir2rt_context *ctx, const char *where, bool mx);

} // namespace infir2::rt::cuda

#endif // INFIR2_RUNTIME_CUDA_SCALELAYOUT_CUH
