//===- Bf16Gemm.h - BF16 products with FP32 accumulation --------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Internal to the CPU backend: GEMMs whose operands are exactly BF16 (BF16
// tensors, and FP8 values times power-of-two scales) run through oneDNN's
// BF16 matmul, which uses the CPU's avx512_bf16 or AMX instructions: BF16
// products are exact in FP32 and accumulate in FP32, the arithmetic of the
// GPU's tensor cores. On a CPU without BF16 instructions, or with
// INFIR2_CPU_GEMM=fp32 in the environment, the GEMMs run in FP32 SGEMM
// (OpenBLAS) on the widened operands instead: the same products, summed in
// another order.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CPU_BF16GEMM_H
#define INFIR2_RUNTIME_CPU_BF16GEMM_H

#include <cstdint>

namespace infir2::rt::cpu {

/// Whether BF16-exact GEMMs take the BF16 path (decided once per process).
bool bf16GemmEnabled();

/// C[m, n] = op(A)·op(B) (C += op(A)·op(B) with `add`) for row-major BF16
/// matrices, op(X) = Xᵀ when its flag is set (then X is stored [k, m] or
/// [n, k]); leading dimensions as stored. C is FP32, or BF16 rounded once
/// (RNE) from the FP32 sum. Returns false when oneDNN refuses the shapes
/// (the caller then takes the FP32 path).
bool bf16Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
              const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb,
              void *c, int64_t ldc, bool cIsBf16, bool add = false);

} // namespace infir2::rt::cpu

#endif // INFIR2_RUNTIME_CPU_BF16GEMM_H
