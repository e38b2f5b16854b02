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
// time by pointing ctx->backend at infir2rt_cuda_backend().
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

/// The CUDA backend (Backend.h): every entry point below, and device
/// memory, streams and copies for the trainer. Its `open` is
/// infir2rt_cuda_select's.
const struct infir2rt_backend *infir2rt_cuda_backend(void);

/// Makes GPU `local_rank % count` current (one GPU per rank on a node) and
/// reports it: its index, compute capability, and name in `why`. Non-zero
/// when there is no GPU, or when it is not one the backend was built for
/// (compute capability 9.0), saying which.
int32_t infir2rt_cuda_select(int32_t local_rank, int32_t *device,
                             int32_t *major, int32_t *minor, char *why,
                             int64_t why_size);

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
#define INFIR2RT_ENTRY(name, operands, attributes, doc)                                       \
  int32_t infir2rt_cuda_##name(infir2rt_context *ctx, const int64_t *desc,     \
                               const char *where);
#include "infir2/runtime/ABI.def"

#ifdef __cplusplus
}
#endif

#endif // INFIR2_RUNTIME_CUDA_H
