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
/// Bytes in use on the current GPU (all of its memory but the free): the
/// context, the regions, the workspaces, and whatever other processes on
/// the same GPU hold. 0 where it cannot be read.
int64_t infir2rt_cuda_memory_in_use(void);
/// The step stream (blocking, so that the default stream's copies stay
/// ordered with it), and waiting for it: where asynchronous kernel failures
/// surface.
int32_t infir2rt_cuda_stream_create(void **stream, char *why, int64_t why_size);
void infir2rt_cuda_stream_destroy(void *stream);
int32_t infir2rt_cuda_synchronize(void *stream, char *why, int64_t why_size);

/// infir2rt_cuda_<name> for every entry point of ABI.def, declared from
/// ABI.def itself so that the two lists cannot disagree: the same
/// descriptors, attributes and errors as the CPU backend's infir2rt_<name>.
/// What each family guarantees against the CPU backend (the GPU tests hold
/// them to it):
/// - quantize, quantize_dual, amax, dequantize (Quantize.cu): bit for bit;
///   inputs F32 or BF16, scales F32; NaN propagates through amax.
/// - rms_norm_quantize_dual, swiglu_quantize_dual (FusedQuantize.cu): the
///   producer's kernel also feeds the amaxes of both layouts; the bytes of
///   the producer's call followed by quantize_dual's.
/// - scaled_matmul (ScaledMatmul.cu): cuBLASLt's block-scaled FP8 modes
///   (Hopper, cuBLAS >= 12.9): 1x128 groups along K, 128x128 blocks or
///   per-tensor scales; a rank-2 rhs; BF16 or FP32 out. matmul: the
///   transpose flags, batches and a shared rank-2 rhs, BF16 or FP32 with
///   FP32 accumulation.
/// - copy, add, mul, silu, swiglu, their gradients, rms_norm, adamw, sgd
///   (Elementwise.cu): F32/BF16 operands (the optimizers on FP32 state),
///   within one unit in the last place of the CPU's.
/// - fill, transpose, embedding (ids checked), rope (both directions),
///   reduce_sum, global_norm (FP64 sums) (Layout.cu); all_reduce,
///   reduce_scatter, all_gather on device buffers through the context's
///   communicator (staged through host memory without device collectives)
///   or copies when alone.
/// - cross_entropy and its gradient (targets checked on the host),
///   rms_norm_grad, embedding_grad (ids checked) (Loss.cu).
/// - attention and attention_grad (Attention.cu): causal GQA, one thread per
///   query, the softmax recomputed in the backward pass (no s x s tensor),
///   head_dim <= 256.
#define INFIR2RT_ENTRY(name, attributes)                                       \
  int32_t infir2rt_cuda_##name(infir2rt_context *ctx, const int64_t *desc,     \
                               const char *where);
#include "infir2/runtime/ABI.def"

#ifdef __cplusplus
}
#endif

#endif // INFIR2_RUNTIME_CUDA_H
