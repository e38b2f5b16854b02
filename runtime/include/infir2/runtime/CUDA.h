//===- CUDA.h - The CUDA backend's entry points -----------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA backend: device probing, and infir2rt_cuda_<entry> for every
// entry point of ABI.def, behind the same descriptor ABI as the CPU backend
// (ABI.h) with the context's regions in device memory. They run on the
// current device, on the context's stream (ctx->stream; on the default
// stream they return when the work is done). A trainer selects them at run
// time by pointing ctx->device at infir2rt_cuda_entries().
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_H
#define INFIR2_RUNTIME_CUDA_H

#include "infir2/runtime/ABI.h"

#ifdef __cplusplus
extern "C" {
#endif

/// 0 and the compute capability of device 0 when a GPU is usable; else
/// non-zero. `why` gets the device's name, or why there is none.
int32_t infir2rt_cuda_probe(int32_t *major, int32_t *minor, char *why,
                            int64_t why_size);

/// Every entry point of ABI.def, in INFIR2RT_ENTRY_<name> order: the table
/// for infir2rt_context::device, through which the CPU-named entry points
/// of a compiled step run on the GPU.
const infir2rt_entry_fn *infir2rt_cuda_entries(void);

// What the trainer needs around the steps. Each returns 0, or non-zero with
// a message in `why`.

/// Makes GPU `local_rank % count` current (one GPU per rank on a node) and
/// reports it: its index, compute capability, and name in `why`. Non-zero
/// when there is no GPU, or when it is not one the backend was built for
/// (compute capability 9.0), saying which.
int32_t infir2rt_cuda_select(int32_t local_rank, int32_t *device,
                             int32_t *major, int32_t *minor, char *why,
                             int64_t why_size);
/// Zeroed device memory; freed with infir2rt_cuda_free.
int32_t infir2rt_cuda_malloc(void **ptr, int64_t bytes, char *why,
                             int64_t why_size);
void infir2rt_cuda_free(void *ptr);
/// Synchronous copies between host and device memory.
int32_t infir2rt_cuda_memcpy(void *dst, const void *src, int64_t bytes,
                             int32_t to_device, char *why, int64_t why_size);
/// Zeroes device memory, queued on `stream`.
int32_t infir2rt_cuda_zero(void *ptr, int64_t bytes, void *stream, char *why,
                           int64_t why_size);
/// How many of `n` device floats are NaN or infinite (waits for `stream`).
int32_t infir2rt_cuda_count_nonfinite(const float *data, int64_t n,
                                      void *stream, int64_t *count, char *why,
                                      int64_t why_size);
/// The step stream (blocking, so that the default stream's copies stay
/// ordered with it), and waiting for it: where asynchronous kernel failures
/// surface.
int32_t infir2rt_cuda_stream_create(void **stream, char *why, int64_t why_size);
void infir2rt_cuda_stream_destroy(void *stream);
int32_t infir2rt_cuda_synchronize(void *stream, char *why, int64_t why_size);

/// fp8.quantize and fp8.quantize_dual on the GPU: the same descriptors,
/// attributes and results (bit for bit) as infir2rt_quantize and
/// infir2rt_quantize_dual; inputs F32 or BF16, scales F32.
int32_t infir2rt_cuda_quantize(infir2rt_context *ctx, const int64_t *desc,
                               const char *where);
int32_t infir2rt_cuda_quantize_dual(infir2rt_context *ctx, const int64_t *desc,
                                    const char *where);

/// fp8.scaled_matmul through cuBLASLt's block-scaled FP8 modes (Hopper,
/// cuBLAS >= 12.9): 1x128 groups along K, 128x128 blocks, or per-tensor
/// scales; a rank-2 rhs; BF16 or FP32 out. Same descriptor as
/// infir2rt_scaled_matmul.
int32_t infir2rt_cuda_scaled_matmul(infir2rt_context *ctx, const int64_t *desc,
                                    const char *where);

/// Casts, element-wise ops, RMSNorm and AdamW: the CPU backend's copy, add,
/// mul, silu, swiglu, rms_norm and adamw, on F32/BF16 operands (AdamW on
/// FP32 state), results within one unit in the last place of the CPU's.
#define INFIR2RT_CUDA_ENTRY(name)                                              \
  int32_t infir2rt_cuda_##name(infir2rt_context *ctx, const int64_t *desc,     \
                               const char *where);
INFIR2RT_CUDA_ENTRY(copy)
INFIR2RT_CUDA_ENTRY(add)
INFIR2RT_CUDA_ENTRY(mul)
INFIR2RT_CUDA_ENTRY(silu)
INFIR2RT_CUDA_ENTRY(swiglu)
INFIR2RT_CUDA_ENTRY(rms_norm)
INFIR2RT_CUDA_ENTRY(adamw)
INFIR2RT_CUDA_ENTRY(silu_grad)
INFIR2RT_CUDA_ENTRY(swiglu_grad)
INFIR2RT_CUDA_ENTRY(sgd)
/// Layout and reductions: fill, transpose, embedding (token ids checked),
/// rope (both directions), reduce_sum and global_norm (FP64 sums).
INFIR2RT_CUDA_ENTRY(fill)
INFIR2RT_CUDA_ENTRY(transpose)
INFIR2RT_CUDA_ENTRY(embedding)
INFIR2RT_CUDA_ENTRY(rope)
INFIR2RT_CUDA_ENTRY(reduce_sum)
INFIR2RT_CUDA_ENTRY(global_norm)
/// The collectives on device buffers, through the context's communicator
/// (staged through host memory) or copies when alone: the gradient
/// all-reduce, and ZeRO-1's reduce-scatter and all-gather.
INFIR2RT_CUDA_ENTRY(all_reduce)
INFIR2RT_CUDA_ENTRY(reduce_scatter)
INFIR2RT_CUDA_ENTRY(all_gather)
/// Losses and gradients: cross_entropy and its gradient (targets checked on
/// the host), rms_norm_grad, embedding_grad (ids checked).
INFIR2RT_CUDA_ENTRY(cross_entropy)
INFIR2RT_CUDA_ENTRY(cross_entropy_grad)
INFIR2RT_CUDA_ENTRY(rms_norm_grad)
INFIR2RT_CUDA_ENTRY(embedding_grad)
/// fp8.amax (NaN propagates) and fp8.dequantize.
INFIR2RT_CUDA_ENTRY(amax)
INFIR2RT_CUDA_ENTRY(dequantize)
/// Causal GQA attention and its gradient: one thread per query, the softmax
/// recomputed in the backward pass (no s x s tensor), head_dim <= 256.
INFIR2RT_CUDA_ENTRY(attention)
INFIR2RT_CUDA_ENTRY(attention_grad)
/// infir2.matmul (transpose flags, batches, a shared rank-2 rhs) through
/// cuBLASLt, BF16 or FP32 with FP32 accumulation.
INFIR2RT_CUDA_ENTRY(matmul)
/// RMSNorm and SwiGLU with FP8 output: the producer's kernel also feeds the
/// amaxes of both layouts; the bytes of the producer's call followed by
/// quantize_dual's.
INFIR2RT_CUDA_ENTRY(rms_norm_quantize_dual)
INFIR2RT_CUDA_ENTRY(swiglu_quantize_dual)
#undef INFIR2RT_CUDA_ENTRY

#ifdef __cplusplus
}
#endif

#endif // INFIR2_RUNTIME_CUDA_H
