//===- ABI.h - The C ABI between compiled steps and the runtime -*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// A compiled training step is a sequence of calls into the runtime, one per
// op, each with a constant descriptor. All tensors live in two regions the
// trainer owns: the state (parameters, master weights, moments, gradient
// accumulators, inputs, scalars; persistent across steps) and the scratch
// arena (everything a step computes; planned by the compiler with
// liveness-based reuse).
//
// Descriptor layout (int64 words):
//   desc[0] = number of operands (inputs first, then outputs)
//   desc[1] = number of attribute words
//   then kOperandWords words per operand:
//     region, element type, rank, byte offset, element count, shape[kMaxRank]
//   then the attribute words: doubles, stored as their bit patterns.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_ABI_H
#define INFIR2_RUNTIME_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// 4: matmul and scaled_matmul take an optional accumulator after their
// result (a trailing has_acc attribute).
// 5: quantize_dual takes one or more groups of five operands; all_reduce
// reduces in-place runs where they lie.
// 6: reduce_sum, rms_norm_grad and embedding_grad take an optional FP32
// accumulator after their results (a trailing has_acc attribute).
// 7: matmul's and scaled_matmul's accumulator may be BF16 (a residual or a
// sum of gradients added before the one rounding).
// 8: rope takes one or more groups of three operands (q and k in one call).
// 9: rms_norm_grad takes an optional residual added into its input's
// gradient (a trailing has_residual attribute); reduce_sum takes one or more
// groups of (input, out[, acc]).
// 10: cross_entropy and cross_entropy_grad take an optional divisor (a
// trailing has_divisor attribute); loss_weight (the entries after it move).
// 11: the context's tp_comm (the tensor-parallel group); tp_reduce; the
// global norm's tp_shards attribute.
// 12: embedding, embedding_grad, cross_entropy and cross_entropy_grad take a
// trailing vocab_shards attribute (the vocabulary split over the group).
// 13: tp_all_gather and tp_reduce_scatter (sequence parallelism), before
// all_gather (the entries after them move).
// 14: the quantizers' pow2 flag is scale_rule (FP8.h's ScaleRule: 0 fp32,
// 1 pow2, 2 floor).
enum { INFIR2RT_ABI_VERSION = 14 };

enum { INFIR2RT_MAX_RANK = 7, INFIR2RT_OPERAND_WORDS = 5 + INFIR2RT_MAX_RANK };

/// What an entry point (and a compiled step, which returns the first
/// non-zero status of its calls) returns.
enum infir2rt_status {
  INFIR2RT_OK = 0,
  INFIR2RT_FAILED = 1, ///< an error: the context says which and where
  /// An input held a value the numerics contract refuses to turn into a
  /// number (a NaN or infinite amax to quantize): the step's results are
  /// meaningless, and a trainer skips the step as it skips a non-finite loss.
  INFIR2RT_NONFINITE = 2,
};

/// Where an operand lives.
enum infir2rt_region { INFIR2RT_STATE = 0, INFIR2RT_SCRATCH = 1 };

/// Element types, as stored.
enum infir2rt_dtype {
  INFIR2RT_F32 = 0,
  INFIR2RT_BF16 = 1,
  INFIR2RT_F16 = 2,
  INFIR2RT_F64 = 3,
  INFIR2RT_E4M3 = 4,
  INFIR2RT_E5M2 = 5,
  INFIR2RT_E8M0 = 6,
  INFIR2RT_I32 = 7,
  INFIR2RT_I64 = 8,
  INFIR2RT_I1 = 9,
};

/// The data-parallel group, as the trainer provides it (MPI on CPUs). Each
/// function returns 0 on success, else non-zero with a message in `error`.
typedef struct infir2rt_communicator {
  void *impl;
  int32_t rank, size;
  /// Sums `n` floats in place; every rank gets the sums.
  int32_t (*all_reduce_sum)(void *impl, float *data, int64_t n, char *error,
                            int64_t error_size);
  /// `send` holds `size` blocks of `n` floats; rank r receives into `recv`
  /// the sum over all ranks of their block r.
  int32_t (*reduce_scatter_sum)(void *impl, const float *send, float *recv,
                                int64_t n, char *error, int64_t error_size);
  /// Every rank's `bytes` bytes of `send`, in rank order, into `recv`
  /// (`size` times `bytes`).
  int32_t (*all_gather)(void *impl, const void *send, void *recv, int64_t bytes,
                        char *error, int64_t error_size);
  /// Set when the group also works on device memory (NCCL on GPUs): the
  /// same three collectives on device pointers, queued on `stream`. A
  /// device backend uses them when set, and stages its buffers through host
  /// memory for the functions above otherwise.
  int32_t (*device_all_reduce_sum)(void *impl, float *data, int64_t n,
                                   void *stream, char *error,
                                   int64_t error_size);
  int32_t (*device_reduce_scatter_sum)(void *impl, const float *send,
                                       float *recv, int64_t n, void *stream,
                                       char *error, int64_t error_size);
  int32_t (*device_all_gather)(void *impl, const void *send, void *recv,
                               int64_t bytes, void *stream, char *error,
                               int64_t error_size);
} infir2rt_communicator;

struct infir2rt_context;

/// An entry point's signature, and each one's index in a backend's table.
typedef int32_t (*infir2rt_entry_fn)(struct infir2rt_context *ctx,
                                     const int64_t *desc, const char *where);
enum infir2rt_entry_index {
#define INFIR2RT_ENTRY(name, operands, attributes, doc) INFIR2RT_ENTRY_##name,
#include "infir2/runtime/ABI.def"
  INFIR2RT_NUM_ENTRIES
};

struct infir2rt_backend;

/// What a compiled step runs against.
typedef struct infir2rt_context {
  uint8_t *regions[2]; ///< state, scratch (host or device memory)
  /// The call that failed: its `where`, by reference (the compiled step's
  /// locations are constants: never copied, so never cut or overrun), and
  /// its message without the location. Read "where: message" through
  /// infir2::rt::callError() (Error.h).
  const char *error_where;
  char error_message[512];
  /// The data-parallel group. Null when the trainer runs as one process:
  /// collectives are then copies.
  const infir2rt_communicator *comm;
  /// The tensor-parallel group (infir2rt_tp_reduce, the global norm's
  /// shards); null without tensor parallelism.
  const infir2rt_communicator *tp_comm;
  /// The backend the regions belong to and every infir2rt_<name> runs on
  /// (Backend.h); null is the CPU backend.
  const struct infir2rt_backend *backend;
  /// The backend's stream the step's work is queued on (a cudaStream_t on
  /// a GPU); null is the default stream, synchronized after every call.
  void *stream;
} infir2rt_context;

#define INFIR2RT_ENTRY(name, operands, attributes, doc)                                       \
  int32_t infir2rt_##name(infir2rt_context *ctx, const int64_t *desc,          \
                          const char *where);
#include "infir2/runtime/ABI.def"

/// How the CPU backend runs its GEMMs (BF16 products through oneDNN where
/// the CPU has BF16 instructions, else FP32 SGEMM), in words for the
/// trainer's start-up line. Decided once per process; INFIR2_CPU_GEMM=fp32
/// in the environment chooses FP32 SGEMM.
const char *infir2rt_cpu_gemm_info(void);
/// Bytes the CPU backend holds for its kernels' temporary copies (outside
/// the planned regions; reused from step to step).
int64_t infir2rt_cpu_pool_bytes(void);

/// Bytes per element of a dtype.
static inline int64_t infir2rt_dtype_size(int64_t dtype) {
  switch (dtype) {
  case INFIR2RT_F32:
  case INFIR2RT_I32:
    return 4;
  case INFIR2RT_BF16:
  case INFIR2RT_F16:
    return 2;
  case INFIR2RT_F64:
  case INFIR2RT_I64:
    return 8;
  default:
    return 1;
  }
}

// What a compiled model object exports. The manifest is one JSON object,
// infir2::rt::Manifest (Manifest.h, format "infir2-manifest", this ABI
// version): the layout of the state region, the scratch sizes, the shapes
// and the optimizer the model was compiled for.
extern const char infir2_model_manifest[];
int32_t infir2_train_step(infir2rt_context *ctx);
int32_t infir2_optimizer_step(infir2rt_context *ctx);
int32_t infir2_eval_step(infir2rt_context *ctx);
/// One token of generation (models compiled with a decode step; the trainer
/// driver declares it weak, see runtime/driver/loop/Main.cpp).
int32_t infir2_decode_step(infir2rt_context *ctx);
/// Fills the FP8 weight cache from the parameters (models compiled with
/// one: the FP8 recipe; declared weak by the driver, like the decode step).
int32_t infir2_quantize_weights(infir2rt_context *ctx);

#ifdef __cplusplus
}
#endif

#endif // INFIR2_RUNTIME_ABI_H
