//===- FlashAttention.cuh - Attention on the tensor cores -------*- CUDA -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Causal or full grouped-query attention and its gradient with BF16
// operands on the tensor cores (FlashAttention.cu), for the shapes the
// models use: BF16 queries, keys and values (and result gradient), head_dim
// 64 or 128, as many keys as queries, optional segment ids. Attention.cu
// takes this path when `flashTakes` says so and keeps its FP32 kernels for
// everything else (FP32 models, other head sizes, the decode step).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_FLASHATTENTION_CUH
#define INFIR2_RUNTIME_CUDA_FLASHATTENTION_CUH

#include "DeviceView.cuh"
#include "infir2/runtime/ABI.h"

#include <cstdint>

namespace infir2::rt::cuda {

/// One attention call: operands as laid out by the runtime (rows of
/// heads * head_dim values per token, [batch, seq, ...]).
struct FlashProblem {
  const void *q, *k, *v; ///< BF16
  const void *dout;      ///< BF16 result gradient (the gradient only)
  View out;              ///< the result (forward)
  View dq, dk, dv;       ///< the gradients (backward), overwritten
  const int32_t *segments; ///< [batch, seq] segment ids, or null
  int64_t batch, seq, heads, kvHeads, headDim;
  float scale;
  bool causal;
};

/// Whether the tensor-core kernels take a problem whose operands have these
/// types (ABI.h) and addresses: BF16 inputs, head_dim 64 or 128, 16-byte
/// aligned rows.
bool flashTakes(const FlashProblem &p, int64_t qType, int64_t kType,
                int64_t vType, int64_t doutType);

/// The result (FP32 softmax statistics, P rounded to BF16 for P·V).
int32_t flashForward(infir2rt_context *ctx, const char *where,
                     const FlashProblem &p);

/// dQ, dK and dV: the softmax statistics and rowsum(dO ∘ O) first (a
/// forward pass), then dK and dV per block of keys and dQ per block of
/// queries, each written once (no atomics, the same bits every run).
int32_t flashBackward(infir2rt_context *ctx, const char *where,
                      const FlashProblem &p);

} // namespace infir2::rt::cuda

#endif // INFIR2_RUNTIME_CUDA_FLASHATTENTION_CUH
