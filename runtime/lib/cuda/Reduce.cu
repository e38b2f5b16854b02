//===- Reduce.cu - reduce_sum and global_norm on the GPU -------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of the CPU backend's reduce_sum (a bias's gradient: the
// sum over leading dimensions, Reduce.cuh's column sums) and global_norm
// (the gradients' norm: each gradient's blocks write partial sums of
// squares, one block adds them in order and takes the root, on the device).
// FP64 sums like the CPU backend's, in another order, the same every run.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "DeviceView.cuh"
#include "Reduce.cuh"
#include "TensorParallel.cuh"
#include "Workspace.h"
#include "infir2/runtime/CUDA.h"
#include "infir2/runtime/Collectives.h"
#include "infir2/runtime/Descriptor.h"

#include <algorithm>
#include <cmath>

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

/// reduce_sum's term: element (r, c) of x as [rows, cols].
struct Element {
  View x;
  int64_t cols;
  __device__ double operator()(int64_t r, int64_t c) const {
    return x.get(r * cols + c);
  }
};

/// A block-wide FP64 sum, the same tree every run; thread 0 gets it.
__device__ double blockSum(double v, double *shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s)
      shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  return shared[0];
}

/// partial[b] = Σ (scale · g[i])² over block b's elements (grid-stride).
__global__ void sumSquaresKernel(const float *g, int64_t n,
                                 const float *scale, double *partial) {
  __shared__ double shared[kThreads];
  double v = 0.0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    double s = double(*scale * g[i]);
    v += s * s;
  }
  v = blockSum(v, shared);
  if (threadIdx.x == 0)
    partial[blockIdx.x] = v;
}

/// *total = Σ partial[0..count), in a fixed order; *norm = its root.
__global__ void normKernel(const double *partial, int64_t count, double *total,
                           float *norm) {
  __shared__ double shared[kThreads];
  double v = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += kThreads)
    v += partial[i];
  v = blockSum(v, shared);
  if (threadIdx.x == 0) {
    *total = v;
    *norm = float(sqrt(v));
  }
}

/// The shards' squared norm as the group sums it (FP32), and back.
__global__ void narrowKernel(const double *total, float *wire) {
  *wire = float(*total);
}
__global__ void widenKernel(const float *wire, double *partial) {
  *partial = double(*wire);
}

} // namespace

extern "C" int32_t infir2rt_cuda_reduce_sum(infir2rt_context *ctx,
                                            const int64_t *desc,
                                            const char *where) {
  // Groups of (input, out[, acc]), each independent of the others: every
  // accumulator (FP32, out's type; possibly out itself, its values start
  // each column's sum) is checked before anything is launched, and the
  // groups share one workspace, in stream order.
  bool hasAcc = attrs::decode<attrs::reduce_sum>(desc).has_acc;
  int64_t size = hasAcc ? 3 : 2, n = desc[0], bytes = 0;
  for (int64_t g = 0; g < n; g += size) {
    Operand x = descOperand(ctx, desc, g), out = descOperand(ctx, desc, g + 1);
    const uint8_t *acc = nullptr;
    if (int32_t rc = infir2::rt::gradientAccumulator(ctx, desc, hasAcc, g + 2,
                                                     out, where, &acc))
      return rc;
    bytes = std::max(bytes, infir2::rt::cuda::columnPartialBytes(
                                x.numel / out.numel, out.numel));
  }
  double *partial = nullptr;
  INFIR2_CUDA_CHECK(ctx, infir2::rt::cuda::takeWorkspace({{&partial, bytes}}),
                    where);
  for (int64_t g = 0; g < n; g += size) {
    Operand x = descOperand(ctx, desc, g), out = descOperand(ctx, desc, g + 1);
    const uint8_t *acc = nullptr;
    (void)infir2::rt::gradientAccumulator(ctx, desc, hasAcc, g + 2, out, where,
                                          &acc);
    infir2::rt::cuda::sumColumns(
        ctx, Element{viewOf(x), out.numel}, x.numel / out.numel, out.numel,
        partial, viewOf(out), reinterpret_cast<const float *>(acc));
  }
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

extern "C" int32_t infir2rt_cuda_global_norm(infir2rt_context *ctx,
                                             const int64_t *desc,
                                             const char *where) {
  // Each gradient's blocks write partial sums of squares (at most 256 per
  // gradient), one block adds them in order and takes the root: on the
  // device, with the scale read there.
  // Under tensor parallelism the first tp_shards gradients are this rank's
  // shards: their squares are summed first, over the group (FP32 on the
  // wire, as on the CPU), into one more partial before the others'.
  int64_t shards = attrs::decode<attrs::global_norm>(desc).tp_shards;
  if (shards > 0 && !ctx->tp_comm)
    return setCallError(ctx, where, "%s",
                        "a tensor-parallel step runs on its group, and this "
                        "context has none");
  int64_t n = desc[0], count = 0, shardCount = 0;
  auto blocksOf = [](int64_t numel) {
    return std::clamp<int64_t>(blocksFor(numel), 1, kThreads);
  };
  for (int64_t g = 0; g < n - 2; ++g) {
    count += blocksOf(descOperand(ctx, desc, g).numel);
    if (g + 1 == shards)
      shardCount = count;
  }
  int64_t skip = shards > 0 ? 1 : 0; // the group's sum's partial
  double *partial = nullptr, *total = nullptr;
  float *wire = nullptr;
  INFIR2_CUDA_CHECK(
      ctx,
      infir2::rt::cuda::takeWorkspace({{&partial, (count + skip) * 8},
                                       {&total, sizeof *total},
                                       {&wire, sizeof *wire}}),
      where);
  cudaStream_t stream = infir2::rt::cuda::streamOf(ctx);
  const float *scale =
      reinterpret_cast<const float *>(descOperand(ctx, desc, n - 2).ptr);
  float *norm = reinterpret_cast<float *>(descOperand(ctx, desc, n - 1).ptr);
  for (int64_t g = 0, at = 0; g < n - 2; ++g) {
    Operand o = descOperand(ctx, desc, g);
    if (g == shards)
      at += skip;
    sumSquaresKernel<<<unsigned(blocksOf(o.numel)), kThreads, 0, stream>>>(
        reinterpret_cast<const float *>(o.ptr), o.numel, scale, partial + at);
    at += blocksOf(o.numel);
  }
  if (shards > 0) {
    normKernel<<<1, kThreads, 0, stream>>>(partial, shardCount, total, norm);
    narrowKernel<<<1, 1, 0, stream>>>(total, wire);
    INFIR2_CUDA_CHECK(ctx, cudaGetLastError(), where);
    if (int32_t rc = infir2::rt::cuda::groupSum(
            ctx, ctx->tp_comm, wire, 1, where, "the shards' squared norm"))
      return rc;
    widenKernel<<<1, 1, 0, stream>>>(wire, partial + shardCount);
    normKernel<<<1, kThreads, 0, stream>>>(partial + shardCount,
                                           count + 1 - shardCount, total, norm);
  } else {
    normKernel<<<1, kThreads, 0, stream>>>(partial, count, total, norm);
  }
  if (int32_t rc = infir2::rt::cuda::finishLaunch(ctx, where))
    return rc;
  if (attrs::decode<attrs::global_norm>(desc).across_ranks &&
      ctx->comm) { // ZeRO-1: every rank's shards
    double ss = 0.0;
    INFIR2_CUDA_CHECK(ctx,
                      cudaMemcpyAsync(&ss, total, sizeof ss,
                                      cudaMemcpyDeviceToHost, stream),
                      where);
    INFIR2_CUDA_CHECK(ctx, cudaStreamSynchronize(stream), where);
    float all = float(ss);
    char error[256] = {0};
    if (ctx->comm->all_reduce_sum(ctx->comm->impl, &all, 1, error,
                                  sizeof error))
      return setCallError(ctx, where, "all-reduce of the squared norm failed: %s",
                      error);
    float root = float(std::sqrt(double(all)));
    INFIR2_CUDA_CHECK(ctx,
                      cudaMemcpyAsync(norm, &root, sizeof root,
                                      cudaMemcpyHostToDevice, stream),
                      where);
    INFIR2_CUDA_CHECK(ctx, cudaStreamSynchronize(stream), where);
  }
  return 0;
}
