//===- TensorParallel.cu - The tensor-parallel collectives on the GPU -----===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// tp_reduce, tp_all_gather and tp_reduce_scatter on the same descriptors as
// the CPU backend's (Collectives.cpp), and what the vocabulary-parallel
// embedding and loss share with the group (TensorParallel.cuh). The sums
// are FP32 on the wire (a BF16 partial widened exactly, the sum rounded
// once), as on the CPU. A slice along dimension d > 0 is `outer` rows of
// `run` elements; the gather puts rank r's rows at slice r of each outer
// row with one strided copy per rank, the reduce-scatter packs them the
// other way while widening.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "TensorParallel.cuh"
#include "Workspace.h"
#include "infir2/runtime/CUDA.h"
#include "infir2/runtime/Collectives.h"
#include "infir2/runtime/Descriptor.h"

#include <cmath>
#include <vector>

namespace {

using Operand = infir2::rt::DescOperand;
namespace attrs = infir2::rt::attrs;
using infir2::rt::descOperand;
using infir2::rt::setCallError;
using infir2::rt::cuda::View;
using infir2::rt::cuda::viewOf;

constexpr int kThreads = 256;

unsigned blocksFor(int64_t n) {
  return unsigned(std::max<int64_t>((n + kThreads - 1) / kThreads, 1));
}

__global__ void widenKernel(View in, float *out) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < in.numel)
    out[i] = in.get(i);
}

__global__ void storeKernel(const float *in, View out) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < out.numel)
    out.set(i, in[i]);
}

/// send[(r * outer + o) * run + j] = x[(o * ranks + r) * run + j]: slice r
/// of each outer row to block r, widened to FP32.
__global__ void packKernel(View x, float *send, int64_t outer, int64_t run,
                           int64_t ranks) {
  int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= x.numel)
    return;
  int64_t j = k % run, o = (k / run) % outer, r = k / (run * outer);
  send[k] = x.get((o * ranks + r) * run + j);
}

/// The group of a tensor-parallel call, or the call failed.
int32_t tensorParallelGroup(infir2rt_context *ctx, const char *where,
                            const infir2rt_communicator **tp) {
  *tp = ctx->tp_comm;
  if (!*tp)
    return setCallError(ctx, where, "%s",
                        "a tensor-parallel step runs on its group, and this "
                        "context has none");
  return 0;
}

/// A sequence collective's group, operands and geometry: the slice (the
/// gather's input, the scatter's output) is `outer` rows of `run` elements
/// of dimension `dim` and those after it; the call fails where the shapes
/// are not a split over the group.
struct SequenceCall {
  const infir2rt_communicator *tp = nullptr;
  Operand in, out;
  int64_t outer = 1, run = 1;
};

int32_t sequenceCall(infir2rt_context *ctx, const int64_t *desc,
                     const char *where, int64_t dim, bool gather,
                     SequenceCall &s) {
  if (int32_t rc = tensorParallelGroup(ctx, where, &s.tp))
    return rc;
  s.in = descOperand(ctx, desc, 0);
  s.out = descOperand(ctx, desc, 1);
  const Operand &slice = gather ? s.in : s.out, &whole = gather ? s.out : s.in;
  char error[256] = {0};
  if (infir2::rt::splitAlong(slice, whole, dim, s.tp->size, s.outer, s.run,
                             error, sizeof error))
    return setCallError(ctx, where, "%s", error);
  return 0;
}

/// Device bytes through a host buffer: `toHost` copies them there (and
/// waits), else back.
cudaError_t stage(infir2rt_context *ctx, void *device,
                  std::vector<uint8_t> &host, bool toHost) {
  cudaStream_t stream = infir2::rt::cuda::streamOf(ctx);
  cudaError_t st = toHost ? cudaMemcpyAsync(host.data(), device, host.size(),
                                            cudaMemcpyDeviceToHost, stream)
                          : cudaMemcpyAsync(device, host.data(), host.size(),
                                            cudaMemcpyHostToDevice, stream);
  return st == cudaSuccess ? cudaStreamSynchronize(stream) : st;
}

} // namespace

namespace infir2::rt::cuda {

int32_t groupSum(infir2rt_context *ctx, const infir2rt_communicator *group,
                 float *data, int64_t n, const char *where, const char *what) {
  char error[256] = {0};
  if (group->device_all_reduce_sum) {
    if (group->device_all_reduce_sum(group->impl, data, n, ctx->stream, error,
                                     sizeof error))
      return setCallError(ctx, where, "all-reduce of %s failed: %s", what,
                          error);
    return 0;
  }
  std::vector<uint8_t> host(static_cast<size_t>(n * 4));
  INFIR2_CUDA_CHECK(ctx, stage(ctx, data, host, /*toHost=*/true), where);
  if (group->all_reduce_sum(group->impl, reinterpret_cast<float *>(host.data()),
                            n, error, sizeof error))
    return setCallError(ctx, where, "all-reduce of %s failed: %s", what, error);
  INFIR2_CUDA_CHECK(ctx, stage(ctx, data, host, /*toHost=*/false), where);
  return 0;
}

int32_t groupGather(infir2rt_context *ctx, const infir2rt_communicator *group,
                    const void *send, void *recv, int64_t bytes,
                    const char *where, const char *what) {
  char error[256] = {0};
  if (group->device_all_gather) {
    if (group->device_all_gather(group->impl, send, recv, bytes, ctx->stream,
                                 error, sizeof error))
      return setCallError(ctx, where, "all-gather of %s failed: %s", what,
                          error);
    return 0;
  }
  std::vector<uint8_t> mine(static_cast<size_t>(bytes)),
      all(static_cast<size_t>(bytes * group->size));
  INFIR2_CUDA_CHECK(
      ctx, stage(ctx, const_cast<void *>(send), mine, /*toHost=*/true), where);
  if (group->all_gather(group->impl, mine.data(), all.data(), bytes, error,
                        sizeof error))
    return setCallError(ctx, where, "all-gather of %s failed: %s", what, error);
  INFIR2_CUDA_CHECK(ctx, stage(ctx, recv, all, /*toHost=*/false), where);
  return 0;
}

int32_t vocabularyStart(infir2rt_context *ctx, const char *where,
                        int64_t shards, int64_t rows, int64_t &first) {
  first = 0;
  if (shards == 1)
    return 0;
  const infir2rt_communicator *tp = ctx->tp_comm;
  if (!tp || tp->size != shards)
    return setCallError(ctx, where,
                        "the vocabulary is split over %lld tensor-parallel "
                        "ranks, and this context's group has %d",
                        (long long)shards, tp ? int(tp->size) : 1);
  first = int64_t(tp->rank) * rows;
  return 0;
}

} // namespace infir2::rt::cuda

extern "C" int32_t infir2rt_cuda_tp_reduce(infir2rt_context *ctx,
                                           const int64_t *desc,
                                           const char *where) {
  const infir2rt_communicator *tp = nullptr;
  if (int32_t rc = tensorParallelGroup(ctx, where, &tp))
    return rc;
  Operand in = descOperand(ctx, desc, 0), out = descOperand(ctx, desc, 1);
  float *sum = nullptr;
  INFIR2_CUDA_CHECK(
      ctx, infir2::rt::cuda::takeWorkspace({{&sum, in.numel * 4}}), where);
  cudaStream_t stream = infir2::rt::cuda::streamOf(ctx);
  widenKernel<<<blocksFor(in.numel), kThreads, 0, stream>>>(viewOf(in), sum);
  INFIR2_CUDA_CHECK(ctx, cudaGetLastError(), where);
  if (int32_t rc = infir2::rt::cuda::groupSum(ctx, tp, sum, in.numel, where,
                                              "a tensor-parallel partial sum"))
    return rc;
  storeKernel<<<blocksFor(out.numel), kThreads, 0, stream>>>(sum, viewOf(out));
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

extern "C" int32_t infir2rt_cuda_tp_all_gather(infir2rt_context *ctx,
                                               const int64_t *desc,
                                               const char *where) {
  SequenceCall s;
  if (int32_t rc = sequenceCall(ctx, desc, where,
                                attrs::decode<attrs::tp_all_gather>(desc).dim,
                                /*gather=*/true, s))
    return rc;
  const infir2rt_communicator *tp = s.tp;
  Operand in = s.in, out = s.out;
  int64_t outer = s.outer, run = s.run;
  int64_t esize = infir2rt_dtype_size(in.dtype), bytes = in.numel * esize;
  uint8_t *all = nullptr; // (not zeroed: the gather writes all of it)
  INFIR2_CUDA_CHECK(
      ctx, infir2::rt::cuda::takeWorkspace({{&all, bytes * tp->size}}), where);
  if (int32_t rc = infir2::rt::cuda::groupGather(ctx, tp, in.ptr, all, bytes,
                                                 where, "a sequence slice"))
    return rc;
  // Rank r's rows to slice r of each outer row: `outer` rows of `run`
  // elements, one strided copy per rank.
  int64_t rowBytes = run * esize;
  for (int64_t r = 0; r < tp->size && bytes > 0; ++r)
    INFIR2_CUDA_CHECK(
        ctx,
        cudaMemcpy2DAsync(out.ptr + r * rowBytes, size_t(rowBytes * tp->size),
                          all + r * bytes, size_t(rowBytes), size_t(rowBytes),
                          size_t(outer), cudaMemcpyDeviceToDevice,
                          infir2::rt::cuda::streamOf(ctx)),
        where);
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

extern "C" int32_t infir2rt_cuda_tp_reduce_scatter(infir2rt_context *ctx,
                                                   const int64_t *desc,
                                                   const char *where) {
  SequenceCall s;
  if (int32_t rc = sequenceCall(
          ctx, desc, where, attrs::decode<attrs::tp_reduce_scatter>(desc).dim,
          /*gather=*/false, s))
    return rc;
  const infir2rt_communicator *tp = s.tp;
  Operand in = s.in, out = s.out;
  float *send = nullptr, *mine = nullptr;
  INFIR2_CUDA_CHECK(ctx,
                    infir2::rt::cuda::takeWorkspace(
                        {{&send, in.numel * 4}, {&mine, out.numel * 4}}),
                    where);
  cudaStream_t stream = infir2::rt::cuda::streamOf(ctx);
  packKernel<<<blocksFor(in.numel), kThreads, 0, stream>>>(
      viewOf(in), send, s.outer, s.run, tp->size);
  INFIR2_CUDA_CHECK(ctx, cudaGetLastError(), where);
  char error[256] = {0};
  if (tp->device_reduce_scatter_sum) {
    if (tp->device_reduce_scatter_sum(tp->impl, send, mine, out.numel,
                                      ctx->stream, error, sizeof error))
      return setCallError(ctx, where,
                          "tensor-parallel reduce-scatter of %lld values "
                          "failed: %s",
                          (long long)in.numel, error);
  } else {
    std::vector<uint8_t> all(static_cast<size_t>(in.numel * 4)),
        part(static_cast<size_t>(out.numel * 4));
    INFIR2_CUDA_CHECK(ctx, stage(ctx, send, all, /*toHost=*/true), where);
    if (tp->reduce_scatter_sum(tp->impl,
                               reinterpret_cast<const float *>(all.data()),
                               reinterpret_cast<float *>(part.data()),
                               out.numel, error, sizeof error))
      return setCallError(ctx, where,
                          "tensor-parallel reduce-scatter of %lld values "
                          "failed: %s",
                          (long long)in.numel, error);
    INFIR2_CUDA_CHECK(ctx, stage(ctx, mine, part, /*toHost=*/false), where);
  }
  storeKernel<<<blocksFor(out.numel), kThreads, 0, stream>>>(mine, viewOf(out));
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

namespace {

/// Token t's maximum over this rank's columns, the sum of exp(x - max) over
/// them, and its target's logit where this rank holds the target (else 0):
/// `mine[3t..3t+3)`, zero for a token of weight 0. One block per token.
__global__ void shardStatsKernel(View logits, const int32_t *targets,
                                 const float *w, int64_t vocab, int64_t first,
                                 double *mine) {
  __shared__ double shared[kThreads];
  int64_t t = blockIdx.x;
  double *out = mine + 3 * t;
  if (w[t] == 0.0f) {
    if (threadIdx.x == 0)
      out[0] = out[1] = out[2] = 0.0;
    return;
  }
  auto reduce = [&](double v, bool max) {
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s /= 2) {
      if (threadIdx.x < s)
        shared[threadIdx.x] =
            max ? fmax(shared[threadIdx.x], shared[threadIdx.x + s])
                : shared[threadIdx.x] + shared[threadIdx.x + s];
      __syncthreads();
    }
    double r = shared[0];
    __syncthreads();
    return r;
  };
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads)
    mx = fmaxf(mx, logits.get(t * vocab + i));
  mx = float(reduce(mx, /*max=*/true));
  double sum = 0.0; // in FP64, as the CPU backend's
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads)
    sum += exp(double(logits.get(t * vocab + i) - mx));
  double total = reduce(sum, /*max=*/false);
  if (threadIdx.x == 0) {
    int64_t id = int64_t(targets[t]) - first;
    out[0] = mx;
    out[1] = total;
    out[2] = id >= 0 && id < vocab ? double(logits.get(t * vocab + id)) : 0.0;
  }
}

/// The group's parts of each token combined (rank r's token t at
/// all[3 (r tokens + t)]), as the CPU backend combines them.
__global__ void combineKernel(const double *all, const float *w, int64_t tokens,
                              int64_t ranks, double *lse, double *target) {
  int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= tokens)
    return;
  lse[t] = target[t] = 0.0;
  if (w[t] == 0.0f)
    return;
  double mx = all[3 * t], sum = 0.0, logit = 0.0;
  for (int64_t r = 1; r < ranks; ++r)
    mx = fmax(mx, all[3 * (r * tokens + t)]);
  for (int64_t r = 0; r < ranks; ++r) {
    const double *part = all + 3 * (r * tokens + t);
    sum += part[1] * exp(part[0] - mx);
    logit += part[2];
  }
  lse[t] = mx + log(sum);
  target[t] = logit;
}

__global__ void shardedLossKernel(const double *lse, const double *target,
                                  const float *w, int64_t tokens, double *sum) {
  __shared__ double shared[kThreads];
  double v = 0.0;
  for (int64_t t = threadIdx.x; t < tokens; t += kThreads)
    if (w[t] != 0.0f)
      v += double(w[t]) * (lse[t] - target[t]);
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s)
      shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    *sum += shared[0];
}

} // namespace

namespace infir2::rt::cuda {

int32_t wholeVocabulary(infir2rt_context *ctx, const char *where, View logits,
                        const int32_t *targets, const float *w, int64_t tokens,
                        int64_t vocab, int64_t first, int64_t shards,
                        double *parts, const double **lse,
                        const double **target) {
  const infir2rt_communicator *tp = nullptr;
  if (int32_t rc = tensorParallelGroup(ctx, where, &tp))
    return rc;
  double *mine = parts, *all = mine + 3 * tokens,
         *l = all + 3 * tokens * shards, *g = l + tokens;
  *lse = l;
  *target = g;
  if (tokens == 0)
    return 0;
  cudaStream_t stream = streamOf(ctx);
  shardStatsKernel<<<unsigned(tokens), kThreads, 0, stream>>>(
      logits, targets, w, vocab, first, mine);
  INFIR2_CUDA_CHECK(ctx, cudaGetLastError(), where);
  if (int32_t rc = groupGather(ctx, tp, mine, all, 3 * tokens * 8, where,
                               "the loss's parts over the vocabulary"))
    return rc;
  combineKernel<<<blocksFor(tokens), kThreads, 0, stream>>>(all, w, tokens,
                                                            shards, l, g);
  return finishLaunch(ctx, where);
}

void addShardedLoss(infir2rt_context *ctx, const double *lse,
                    const double *target, const float *w, int64_t tokens,
                    double *sum) {
  shardedLossKernel<<<1, kThreads, 0, streamOf(ctx)>>>(lse, target, w, tokens,
                                                       sum);
}

} // namespace infir2::rt::cuda
