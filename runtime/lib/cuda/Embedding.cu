//===- Embedding.cu - The embedding and its gradient on the GPU -----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of the CPU backend's embedding and embedding_grad, on
// the same descriptors, with the same out-of-range error (refused at the
// step's read-back, Deferred.h). The gradient's rows are summed with FP32
// atomics, so in another order than the CPU backend's (the GPU test allows
// for it). With the vocabulary split over the tensor-parallel group
// (vocab_shards), a rank holds rows [first, first + V) of the whole table:
// other ranks' ids give zero rows and add nothing to its gradient.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "Deferred.h"
#include "DeviceView.cuh"
#include "TensorParallel.cuh"
#include "Workspace.h"
#include "infir2/runtime/CUDA.h"
#include "infir2/runtime/Descriptor.h"

namespace {

using Operand = infir2::rt::DescOperand;
namespace attrs = infir2::rt::attrs;
using infir2::rt::descOperand;
using infir2::rt::setCallError;
using infir2::rt::cuda::View;
using infir2::rt::cuda::viewOf;

constexpr int kThreads = 256;

unsigned blocksFor(int64_t n) {
  return unsigned((n + kThreads - 1) / kThreads);
}

/// The table is rows [first, first + vocab) of `whole` (the vocabulary
/// split over the tensor-parallel group): other ranks' ids give zero rows.
__global__ void embeddingKernel(View table, const int32_t *ids, View out,
                                int64_t tokens, int64_t dim, int64_t vocab,
                                int64_t first, int64_t whole,
                                infir2::rt::cuda::RefusalSlot slot) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= tokens * dim)
    return;
  int64_t t = i / dim, id = ids[t];
  if (id < 0 || id >= whole) {
    if (i % dim == 0)
      infir2::rt::cuda::refuseId(slot, t, int32_t(id));
    return;
  }
  id -= first;
  out.set(i, id >= 0 && id < vocab ? table.get(id * dim + i % dim) : 0.0f);
}

template <typename T> __global__ void castKernel(const T *in, View out) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < out.numel)
    out.set(i, float(in[i]));
}

/// This rank's `vocab` rows start at id `first` of `whole` (the vocabulary
/// split over the tensor-parallel group): other ranks' ids add nothing.
__global__ void embeddingGradKernel(const int32_t *ids, View dy, float *out,
                                    int64_t tokens, int64_t dim, int64_t vocab,
                                    int64_t first, int64_t whole,
                                    infir2::rt::cuda::RefusalSlot slot) {
  int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= tokens * dim)
    return;
  int64_t t = k / dim, i = k % dim, id = ids[t];
  if (id < 0 || id >= whole) {
    if (i == 0)
      infir2::rt::cuda::refuseId(slot, t, int32_t(id));
    return;
  }
  id -= first;
  if (id >= 0 && id < vocab)
    atomicAdd(&out[id * dim + i], dy.get(k));
}

} // namespace

extern "C" int32_t infir2rt_cuda_embedding(infir2rt_context *ctx,
                                           const int64_t *desc,
                                           const char *where) {
  Operand table = descOperand(ctx, desc, 0), ids = descOperand(ctx, desc, 1),
          out = descOperand(ctx, desc, 2);
  if (ids.dtype != INFIR2RT_I32)
    return setCallError(ctx, where, "%s", "the CUDA embedding takes i32 ids");
  int64_t vocab = table.shape[0], dim = table.shape[1], first = 0;
  int64_t shards = attrs::decode<attrs::embedding>(desc).vocab_shards;
  if (int32_t rc =
          infir2::rt::cuda::vocabularyStart(ctx, where, shards, vocab, first))
    return rc;
  // An id out of range is refused (Deferred.h), its row left as it was.
  unsigned long long *own = nullptr;
  INFIR2_CUDA_CHECK(ctx, infir2::rt::cuda::takeWorkspace({{&own, 16}}), where);
  const infir2::rt::cuda::RefusalKind kind =
      infir2::rt::cuda::idRefusal(vocab * shards);
  infir2::rt::cuda::RefusalSlot slot;
  if (int32_t rc = infir2::rt::cuda::openRefusal(ctx, where, kind,
                                                 /*detail=*/true, own, slot))
    return rc;
  embeddingKernel<<<blocksFor(ids.numel * dim), kThreads, 0,
                    infir2::rt::cuda::streamOf(ctx)>>>(
      viewOf(table), reinterpret_cast<const int32_t *>(ids.ptr), viewOf(out),
      ids.numel, dim, vocab, first, vocab * shards, slot);
  if (int32_t rc = infir2::rt::cuda::finishLaunch(ctx, where))
    return rc;
  return infir2::rt::cuda::closeRefusal(ctx, where, kind, own, slot);
}

extern "C" int32_t infir2rt_cuda_embedding_grad(infir2rt_context *ctx,
                                                const int64_t *desc,
                                                const char *where) {
  Operand ids = descOperand(ctx, desc, 0), dy = descOperand(ctx, desc, 1),
          out = descOperand(ctx, desc, 2);
  if (ids.dtype != INFIR2RT_I32)
    return setCallError(ctx, where, "%s",
                        "the CUDA embedding gradient takes i32 ids");
  int64_t vocab = out.shape[0], dim = out.shape[1], first = 0;
  int64_t shards = attrs::decode<attrs::embedding_grad>(desc).vocab_shards;
  if (int32_t rc =
          infir2::rt::cuda::vocabularyStart(ctx, where, shards, vocab, first))
    return rc;
  // Rows are summed in FP32 (atomics): in the result itself when it is
  // FP32, else in a workspace rounded once to the result type, as the CPU
  // backend does. They start from the accumulator when there is one (FP32,
  // the result's type: copied unless it is the result itself), else zero.
  // An id out of range is refused (Deferred.h) and adds nothing.
  const uint8_t *acc = nullptr;
  if (int32_t rc = infir2::rt::gradientAccumulator(
          ctx, desc, attrs::decode<attrs::embedding_grad>(desc).has_acc, 3, out,
          where, &acc))
    return rc;
  float *sum = reinterpret_cast<float *>(out.ptr), *scratch = nullptr;
  unsigned long long *own = nullptr;
  INFIR2_CUDA_CHECK(
      ctx,
      infir2::rt::cuda::takeWorkspace(
          {{&scratch, out.dtype != INFIR2RT_F32 ? out.numel * 4 : 0},
           {&own, 16}}),
      where);
  if (out.dtype != INFIR2RT_F32)
    sum = scratch;
  const infir2::rt::cuda::RefusalKind kind =
      infir2::rt::cuda::idRefusal(vocab * shards);
  infir2::rt::cuda::RefusalSlot slot;
  if (int32_t rc = infir2::rt::cuda::openRefusal(ctx, where, kind,
                                                 /*detail=*/true, own, slot))
    return rc;
  cudaStream_t stream = infir2::rt::cuda::streamOf(ctx);
  if (!acc)
    INFIR2_CUDA_CHECK(ctx, cudaMemsetAsync(sum, 0, out.numel * 4, stream),
                      where);
  else if (acc != out.ptr)
    INFIR2_CUDA_CHECK(ctx,
                      cudaMemcpyAsync(sum, acc, out.numel * 4,
                                      cudaMemcpyDeviceToDevice, stream),
                      where);
  embeddingGradKernel<<<unsigned((ids.numel * dim + kThreads - 1) / kThreads),
                        kThreads, 0, stream>>>(
      reinterpret_cast<const int32_t *>(ids.ptr), viewOf(dy), sum, ids.numel,
      dim, vocab, first, vocab * shards, slot);
  if (out.dtype != INFIR2RT_F32)
    castKernel<<<unsigned((out.numel + kThreads - 1) / kThreads), kThreads, 0,
                 stream>>>(sum, viewOf(out));
  if (int32_t rc = infir2::rt::cuda::finishLaunch(ctx, where))
    return rc;
  return infir2::rt::cuda::closeRefusal(ctx, where, kind, own, slot);
}
