//===- Blocks.h - Scale blocks of FP8 tensors on the CPU --------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Internal to the CPU backend: where each element's scale is in a tensor
// quantized in blocks, shared by the quantizers (Quantize.cpp,
// QuantizeDual.cpp) and the FP8 GEMM (Gemm.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CPU_BLOCKS_H
#define INFIR2_RUNTIME_CPU_BLOCKS_H

#include "Operand.h"

#include "infir2/runtime/FP8.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace infir2::rt::cpu {

/// Where the scale of each element of a tensor quantized in blocks of
/// `block` is. The tensor is seen as rows of its last dimension; blocks span
/// `br` rows of the second-to-last dimension and `bc` columns, and the
/// leading dimensions either all have block 1 or are all covered by one
/// block (tensorwise): then the scale index is linear in c / bc along a row
/// ("fast"). Other mixes take the general path.
struct Blocks {
  const int64_t *shape, *block;
  int64_t rank, R, C, br, bc;
  bool leadOne = true, leadAll = true;

  Blocks(const Operand &x, const int64_t *b)
      : shape(x.shape), block(b), rank(x.rank) {
    C = x.last();
    bc = block[rank - 1];
    R = rank >= 2 ? shape[rank - 2] : 1;
    br = rank >= 2 ? block[rank - 2] : 1;
    for (int64_t i = 0; i + 2 < rank; ++i) {
      leadOne &= block[i] == 1;
      leadAll &= block[i] == shape[i];
    }
  }
  bool fast() const { return leadOne || leadAll; }
  /// The scale index of element (row q, column 0); fast geometry only.
  int64_t rowBase(int64_t q) const {
    int64_t p = leadOne ? q / R : 0, r = q % R;
    return (p * (R / br) + r / br) * (C / bc);
  }
  /// The scale index of element (row q, column c), any geometry.
  int64_t index(int64_t q, int64_t c) const {
    if (fast())
      return rowBase(q) + c / bc;
    int64_t s = 0, stride = 1, rest = q;
    for (int64_t i = rank - 1; i >= 0; --i) {
      int64_t idx = i == rank - 1 ? c : rest % shape[i];
      if (i != rank - 1)
        rest /= shape[i];
      s += (idx / block[i]) * stride;
      stride *= shape[i] / block[i];
    }
    return s;
  }
};

/// Calls fn(element index, scale index) for every element of rows [q0, q1).
template <typename Fn>
void forEachBlocked(const Blocks &g, int64_t q0, int64_t q1, Fn fn) {
  for (int64_t q = q0; q < q1; ++q) {
    if (g.fast()) {
      int64_t base = g.rowBase(q);
      for (int64_t cb = 0, ncb = g.C / g.bc; cb < ncb; ++cb)
        for (int64_t c = cb * g.bc, e = c + g.bc; c < e; ++c)
          fn(q * g.C + c, base + cb);
    } else {
      for (int64_t c = 0; c < g.C; ++c)
        fn(q * g.C + c, g.index(q, c));
    }
  }
}

inline float nanMax(float a, float b) {
  return (std::isnan(a) || std::isnan(b))
             ? std::numeric_limits<float>::quiet_NaN()
             : std::max(a, b);
}

/// Quantizes the FP32 values `x` (numel of `data`) into `data` and `scale`
/// in `block`s; a non-finite block fails the call, naming it.
int32_t quantizeInto(const Call &c, const float *x, const Operand &data,
                     const Operand &scale, FP8Format format, ScaleRule rule,
                     const int64_t *block);

/// The FP32 values data·scale of a quantized operand (exact under pow2
/// scales).
Buffer dequantized(const Operand &data, const Operand &scale,
                   const int64_t *block);

/// Whether every scale is a power of two 2^e, |e| <= 100: then every FP8
/// value (at most 4 significant bits, magnitudes 2^-16 (E5M2) or 2^-9
/// (E4M3) to 57344) times its scale is exact in BF16 (8 bits, normal from
/// 2^-126) and in FP32.
bool powerOfTwoScales(const Operand &scale);

/// The same as BF16 values in `out` when powerOfTwoScales(scale); else
/// false, and `out` unspecified. A NaN code decodes to the quiet NaN, which BF16 holds
/// too.
bool dequantizedBf16(const Operand &data, const Operand &scale,
                     const int64_t *block, Scratch<uint16_t> &out);

/// The FP8 values of `data` without their scales, into `f32` and/or `bf16`
/// (either may be null); exact in both.
void decodedCodes(const Operand &data, float *f32, uint16_t *bf16);

} // namespace infir2::rt::cpu

#endif // INFIR2_RUNTIME_CPU_BLOCKS_H
