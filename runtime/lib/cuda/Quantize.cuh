//===- Quantize.cuh - The GPU quantizer's passes, for fusion ----*- CUDA
//-*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// fp8.quantize and fp8.quantize_dual run in one pass per 128 x 128 tile
// where the granularities allow (TileQuantize.cu), else in three passes:
// the amax of every scale block, the scales, the cast. The fused entry
// points (FusedQuantize.cu) run their producer's kernel first: with the
// tile kernel it stores its results alone (a sink with no amaxes), with the
// three passes it also feeds the amaxes (an AmaxSink) in place of the first
// pass. Either way the results are the unfused calls' bytes.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_QUANTIZE_CUH
#define INFIR2_RUNTIME_CUDA_QUANTIZE_CUH

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/FP8.h"

#include <cstdint>

namespace infir2::rt::cuda {

/// Where an element's scale is: the tensor as rows of its last dimension,
/// blocks of `br` rows (of the second-to-last dimension) by `bc` columns;
/// leading dimensions with block 1 (leadOne) or covered by one block.
struct Geometry {
  int64_t R, C, br, bc;
  bool leadOne;
  __host__ __device__ int64_t index(int64_t q, int64_t c) const {
    int64_t p = leadOne ? q / R : 0, r = q % R;
    return (p * (R / br) + r / br) * (C / bc) + c / bc;
  }
};

/// The geometry of a block shape, or false if the GPU kernels do not handle
/// it (mixed leading blocks).
inline bool geometryOf(const int64_t *shape, int64_t rank, const int64_t *block,
                       Geometry &g) {
  g.C = shape[rank - 1];
  g.bc = block[rank - 1];
  g.R = rank >= 2 ? shape[rank - 2] : 1;
  g.br = rank >= 2 ? block[rank - 2] : 1;
  bool one = true, all = true;
  for (int64_t i = 0; i + 2 < rank; ++i) {
    one &= block[i] == 1;
    all &= block[i] == shape[i];
  }
  g.leadOne = one;
  return one || all;
}

/// Feeds each stored value into the amax of its block, in one layout or
/// both (the column-wise copy of the [T, K] view, as [K, T]). Atomics on
/// the float bits: the order does not matter, and NaN propagates.
struct AmaxSink {
  Geometry g, gt;
  unsigned *amax, *amaxT;
  __device__ void operator()(int64_t i, float v) const {
    if (!amax) // the producer alone (the tile quantizer reads its result)
      return;
    unsigned bits = __float_as_uint(fabsf(v));
    int64_t q = i / g.C, c = i % g.C;
    atomicMax(&amax[g.index(q, c)], bits);
    if (amaxT)
      atomicMax(&amaxT[gt.index(c, q)], bits);
  }
};

/// A quantization's non-finite flag: the smallest failing scale block
/// (counting the row-wise copy's blocks first), and whether its amax is
/// NaN; all ones when none failed.
__host__ __device__ inline unsigned long long nonFiniteFlag(int64_t block,
                                                            bool nan) {
  return (unsigned long long)block * 2 + (nan ? 1 : 0);
}

/// One quantization for the one-pass tile kernel (TileQuantize.cu): the
/// input as [T, C] rows (n elements), the row-wise copy, and for
/// quantize_dual the column-wise copy [C, T] (dataT non-null), whose flags
/// count from flagBaseT.
struct TileJob {
  const uint8_t *x;
  int64_t dtype, n;
  Geometry g;
  uint8_t *data;
  float *scale;
  Geometry gt;
  uint8_t *dataT;
  float *scaleT;
  int64_t flagBaseT;
  FP8Format format;
  ScaleRule rule;
  /// Where a non-finite amax is flagged: atomicMin(bad, tag | flag).
  unsigned long long *bad;
  unsigned long long tag;
};

/// Whether the tile kernel takes `job`: 1 x 128 groups or 128 x 128 blocks
/// in both copies, T and C multiples of 128, aligned rows.
bool tileQuantizable(const TileJob &job);

/// Launches the tile kernel on the context's stream.
int32_t tileQuantize(infir2rt_context *ctx, const char *where,
                     const TileJob &job);

/// The first pass of a fused quantization: launches, on the context's
/// stream, the kernel that produces the quantizer's input and feeds `sink`.
using AmaxPass = int32_t (*)(infir2rt_context *ctx, const int64_t *desc,
                             const AmaxSink &sink);

/// Quantizes as infir2rt_cuda_quantize(_dual) with the descriptor `qdesc`;
/// with an `amaxPass`, that pass (given the caller's `desc`) produces the
/// input and its amaxes instead of the quantizer's own amax pass.
int32_t quantizeWith(infir2rt_context *ctx, const int64_t *qdesc,
                     const char *where, bool dual, AmaxPass amaxPass,
                     const int64_t *desc);

} // namespace infir2::rt::cuda

#endif // INFIR2_RUNTIME_CUDA_QUANTIZE_CUH
