//===- Quantize.cuh - The GPU quantizer's passes, for fusion ----*- CUDA
//-*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// fp8.quantize and fp8.quantize_dual run in three passes: the amax of every
// scale block, the scales, the cast. The fused entry points
// (FusedQuantize.cu) replace the first pass with the producer's kernel,
// which feeds the amaxes as it stores its results (an AmaxSink); the scales
// and the cast are the quantizer's own, so the results are the same bytes.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_QUANTIZE_CUH
#define INFIR2_RUNTIME_CUDA_QUANTIZE_CUH

#include "infir2/runtime/ABI.h"

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
    unsigned bits = __float_as_uint(fabsf(v));
    int64_t q = i / g.C, c = i % g.C;
    atomicMax(&amax[g.index(q, c)], bits);
    if (amaxT)
      atomicMax(&amaxT[gt.index(c, q)], bits);
  }
};

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
