//===- TensorParallel.cuh - The tensor-parallel group on the GPU -*- C++
//-*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// What the CUDA kernels of a tensor-parallel step share with the group
// (TensorParallel.cu): a sum and a gather of device memory over a group,
// through its device functions (NCCL) when it has them, else staged through
// host memory over its host functions (MPI; several ranks may then share a
// GPU); the first row of a rank's slice of the vocabulary; and the
// vocabulary-parallel loss's whole-vocabulary log-sum-exp, as the CPU
// backend computes it (Loss.cpp): each rank's per-token maximum, sum of
// exponentials and target logit, gathered (3 doubles per token), never the
// logits.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_TENSORPARALLEL_CUH
#define INFIR2_RUNTIME_CUDA_TENSORPARALLEL_CUH

#include "DeviceView.cuh"
#include "infir2/runtime/ABI.h"

#include <cstdint>

namespace infir2::rt::cuda {

/// Sums `n` device floats in place over `group`; `what` names them in an
/// error.
int32_t groupSum(infir2rt_context *ctx, const infir2rt_communicator *group,
                 float *data, int64_t n, const char *where, const char *what);

/// Every rank's `bytes` device bytes of `send`, in rank order, into `recv`.
int32_t groupGather(infir2rt_context *ctx, const infir2rt_communicator *group,
                    const void *send, void *recv, int64_t bytes,
                    const char *where, const char *what);

/// The first of this rank's `rows` rows of a vocabulary split over
/// `shards` tensor-parallel ranks (0 when whole); the call fails where the
/// context's group is not of that size.
int32_t vocabularyStart(infir2rt_context *ctx, const char *where,
                        int64_t shards, int64_t rows, int64_t &first);

/// Doubles of workspace wholeVocabulary needs for `tokens` tokens.
inline int64_t wholeVocabularyDoubles(int64_t tokens, int64_t shards) {
  return shards > 1 ? tokens * (3 + 3 * shards + 2) : 0;
}

/// For each token of weight w[t] != 0 (the others get 0): `lse[t]`, the log
/// of the sum of exponentials over the whole vocabulary, and `target[t]`,
/// its target's logit, from this rank's columns of the logits (`vocab`
/// wide, its first id `first`) and the group's; `parts` holds
/// wholeVocabularyDoubles(tokens, shards), lse and target point into it.
int32_t wholeVocabulary(infir2rt_context *ctx, const char *where, View logits,
                        const int32_t *targets, const float *w, int64_t tokens,
                        int64_t vocab, int64_t first, int64_t shards,
                        double *parts, const double **lse,
                        const double **target);

/// *sum += Σ_t w[t] (lse[t] - target[t]) (one block, a fixed order).
void addShardedLoss(infir2rt_context *ctx, const double *lse,
                    const double *target, const float *w, int64_t tokens,
                    double *sum);

} // namespace infir2::rt::cuda

#endif // INFIR2_RUNTIME_CUDA_TENSORPARALLEL_CUH
