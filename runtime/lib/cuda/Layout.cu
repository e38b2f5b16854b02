//===- Layout.cu - Fill, transpose, RoPE and data-parallel sums on the GPU ===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of the CPU backend's fill, transpose, rope (both
// directions) and the data-parallel collectives, on the same descriptors
// (reduce_sum and global_norm: Reduce.cu; the embedding: Embedding.cu; the
// tensor-parallel collectives: TensorParallel.cu).
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "DeviceView.cuh"
#include "Workspace.h"
#include "infir2/runtime/CUDA.h"
#include "infir2/runtime/Collectives.h"
#include "infir2/runtime/Descriptor.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

using Operand = infir2::rt::DescOperand;
using infir2::rt::allGatherHost;
namespace attrs = infir2::rt::attrs;
using infir2::rt::setCallError;
using infir2::rt::descOperand;
using infir2::rt::reduceScatterHost;
using infir2::rt::RowShard;
using infir2::rt::cuda::View;
using infir2::rt::cuda::viewOf;

constexpr int kThreads = 256;

unsigned blocksFor(int64_t n) {
  return unsigned((n + kThreads - 1) / kThreads);
}

__global__ void fillKernel(View out, float v) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < out.numel)
    out.set(i, v);
}

struct Perm {
  int64_t rank, inStride[INFIR2RT_MAX_RANK], outShape[INFIR2RT_MAX_RANK],
      perm[INFIR2RT_MAX_RANK];
};

__global__ void transposeKernel(const uint8_t *in, uint8_t *out, int64_t n,
                                int64_t size, Perm p) {
  int64_t flat = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (flat >= n)
    return;
  int64_t rest = flat, src = 0;
  for (int64_t i = p.rank - 1; i >= 0; --i) {
    int64_t idx = rest % p.outShape[i];
    rest /= p.outShape[i];
    src += idx * p.inStride[p.perm[i]];
  }
  for (int64_t b = 0; b < size; ++b)
    out[flat * size + b] = in[src * size + b];
}

__global__ void ropeKernel(View x, const int32_t *pos, View out, int64_t tokens,
                           int64_t width, int64_t seq, int64_t hd, bool shared,
                           double theta, double sign) {
  int64_t half = hd / 2, heads = width / hd;
  int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= tokens * heads * half)
    return;
  int64_t i = k % half, h = (k / half) % heads, t = k / (half * heads);
  double p = double(pos[shared ? t % seq : t]);
  double angle = sign * p * pow(theta, -2.0 * double(i) / double(hd));
  float cs = float(cos(angle)), sn = float(sin(angle));
  int64_t base = t * width + h * hd;
  float a = x.get(base + i), b = x.get(base + i + half);
  out.set(base + i, a * cs - b * sn);
  out.set(base + i + half, b * cs + a * sn);
}

} // namespace

extern "C" int32_t infir2rt_cuda_fill(infir2rt_context *ctx,
                                      const int64_t *desc, const char *where) {
  Operand out = descOperand(ctx, desc, 0);
  if (out.dtype != INFIR2RT_F32 && out.dtype != INFIR2RT_BF16)
    return setCallError(ctx, where, "%s", "the CUDA fill writes f32 or bf16");
  fillKernel<<<blocksFor(out.numel), kThreads, 0,
               infir2::rt::cuda::streamOf(ctx)>>>(
      viewOf(out), float(attrs::decode<attrs::fill>(desc).value));
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

extern "C" int32_t infir2rt_cuda_transpose(infir2rt_context *ctx,
                                           const int64_t *desc,
                                           const char *where) {
  Operand in = descOperand(ctx, desc, 0), out = descOperand(ctx, desc, 1);
  auto a = attrs::decode<attrs::transpose>(desc);
  Perm p{};
  p.rank = in.rank;
  int64_t stride = 1;
  for (int64_t i = in.rank - 1; i >= 0; --i) {
    p.inStride[i] = stride;
    stride *= in.shape[i];
  }
  for (int64_t i = 0; i < in.rank; ++i) {
    p.outShape[i] = out.shape[i];
    p.perm[i] = a.permutation[i];
  }
  transposeKernel<<<blocksFor(out.numel), kThreads, 0,
                    infir2::rt::cuda::streamOf(ctx)>>>(
      in.ptr, out.ptr, out.numel, infir2rt_dtype_size(in.dtype), p);
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

extern "C" int32_t infir2rt_cuda_rope(infir2rt_context *ctx,
                                      const int64_t *desc, const char *where) {
  // One or more tensors (q and k), three operands each: one launch each.
  auto a = attrs::decode<attrs::rope>(desc);
  for (int64_t g = 0; g + 3 <= infir2::rt::descOperandCount(desc); g += 3) {
    Operand x = descOperand(ctx, desc, g), pos = descOperand(ctx, desc, g + 1),
            out = descOperand(ctx, desc, g + 2);
    if (pos.dtype != INFIR2RT_I32)
      return setCallError(ctx, where, "%s",
                          "the CUDA rope takes i32 positions");
    int64_t hd = a.head_dim, width = x.last();
    int64_t tokens = x.rows(), heads = width / hd;
    ropeKernel<<<blocksFor(tokens * heads * (hd / 2)), kThreads, 0,
                 infir2::rt::cuda::streamOf(ctx)>>>(
        viewOf(x), reinterpret_cast<const int32_t *>(pos.ptr), viewOf(out),
        tokens, width, x.dim(-2), hd, pos.rank == 1, a.theta, a.direction);
  }
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

// The collectives on device buffers. With a communicator that works on
// device memory (NCCL), each bucket is packed on the device, reduced or
// gathered on the step's stream and unpacked there; with a host-only one
// (MPI), it is staged through host memory; alone, the results are the
// operands.

namespace {

/// reduce_scatter's or all_gather's world size (the same attribute).
int64_t worldSizeOf(const int64_t *desc, bool scatter) {
  return scatter ? attrs::decode<attrs::reduce_scatter>(desc).world_size
                 : attrs::decode<attrs::all_gather>(desc).world_size;
}

/// Device-to-device copies queued on the step's stream; the first failure
/// is kept in `status`.
struct DeviceCopy {
  cudaStream_t stream;
  cudaError_t *status;
  void operator()(void *dst, const void *src, int64_t bytes) const {
    if (bytes > 0 && *status == cudaSuccess)
      *status = cudaMemcpyAsync(dst, src, size_t(bytes),
                                cudaMemcpyDeviceToDevice, stream);
  }
};

/// The send and receive buffers of one collective, from the workspace,
/// zeroed on the step's stream (the padding rows stay zero).
cudaError_t takeBuffers(uint8_t **send, int64_t sendBytes, uint8_t **recv,
                        int64_t recvBytes, cudaStream_t stream) {
  cudaError_t st =
      infir2::rt::cuda::takeWorkspace({{send, sendBytes}, {recv, recvBytes}});
  if (st == cudaSuccess && sendBytes)
    st = cudaMemsetAsync(*send, 0, size_t(sendBytes), stream);
  if (st == cudaSuccess && recvBytes)
    st = cudaMemsetAsync(*recv, 0, size_t(recvBytes), stream);
  return st;
}

/// ZeRO-1's bucket over device operands: operand i whole (`wholeFirst`) or a
/// shard, operand n + i the other.
std::vector<RowShard> deviceRowShards(infir2rt_context *ctx,
                                      const int64_t *desc, bool wholeFirst) {
  int64_t n = desc[0] / 2;
  std::vector<RowShard> bucket;
  for (int64_t i = 0; i < n; ++i) {
    Operand whole = descOperand(ctx, desc, wholeFirst ? i : n + i);
    Operand shard = descOperand(ctx, desc, wholeFirst ? n + i : i);
    bucket.push_back(
        {whole.ptr, shard.ptr, whole.dim(0),
         whole.numel / whole.dim(0) * infir2rt_dtype_size(whole.dtype)});
  }
  return bucket;
}

enum class Collective { AllReduce, ReduceScatter, AllGather };

/// One collective on device memory through the communicator's device
/// functions.
int32_t onDevice(infir2rt_context *ctx, const int64_t *desc, const char *where,
                 Collective kind) {
  const infir2rt_communicator *comm = ctx->comm;
  cudaStream_t stream = infir2::rt::cuda::streamOf(ctx);
  cudaError_t status = cudaSuccess;
  DeviceCopy copy{stream, &status};
  char error[256] = {0};
  int64_t n = desc[0] / 2;
  uint8_t *send = nullptr, *recv = nullptr;
  int32_t rc = 0;
  if (kind == Collective::AllReduce) {
    int64_t total = 0;
    for (int64_t i = 0; i < n; ++i)
      total += descOperand(ctx, desc, i).numel;
    INFIR2_CUDA_CHECK(ctx, takeBuffers(&send, total * 4, &recv, 0, stream),
                      where);
    for (int64_t i = 0, at = 0; i < n; ++i) {
      Operand in = descOperand(ctx, desc, i);
      copy(send + at * 4, in.ptr, in.numel * 4);
      at += in.numel;
    }
    rc = status != cudaSuccess
             ? 0
             : comm->device_all_reduce_sum(
                   comm->impl, reinterpret_cast<float *>(send), total,
                   ctx->stream, error, sizeof error);
    for (int64_t i = 0, at = 0; i < n && !rc; ++i) {
      Operand out = descOperand(ctx, desc, n + i);
      copy(out.ptr, send + at * 4, out.numel * 4);
      at += out.numel;
    }
  } else {
    int64_t world = worldSizeOf(desc, kind == Collective::ReduceScatter);
    if (infir2::rt::checkWorldSize(ctx, world, error, sizeof error))
      return setCallError(ctx, where, "%s", error);
    bool scatter = kind == Collective::ReduceScatter;
    std::vector<RowShard> bucket = deviceRowShards(ctx, desc, scatter);
    int64_t block = infir2::rt::shardBytes(bucket, world);
    INFIR2_CUDA_CHECK(ctx,
                      takeBuffers(&send, scatter ? block * world : block, &recv,
                                  scatter ? block : block * world, stream),
                      where);
    if (scatter)
      infir2::rt::packByRank(bucket, world, send, copy);
    else
      infir2::rt::moveShards(send, bucket, world, /*toShards=*/false, copy);
    if (status == cudaSuccess)
      rc = scatter ? comm->device_reduce_scatter_sum(
                         comm->impl, reinterpret_cast<float *>(send),
                         reinterpret_cast<float *>(recv), block / 4,
                         ctx->stream, error, sizeof error)
                   : comm->device_all_gather(comm->impl, send, recv, block,
                                             ctx->stream, error, sizeof error);
    if (!rc && scatter)
      infir2::rt::moveShards(recv, bucket, world, /*toShards=*/true, copy);
    else if (!rc)
      infir2::rt::unpackByRank(recv, bucket, world, copy);
  }
  if (rc)
    return setCallError(ctx, where, "%s", error);
  INFIR2_CUDA_CHECK(ctx, status, where);
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

bool deviceCollectives(const infir2rt_context *ctx) {
  return ctx->comm && ctx->comm->device_all_reduce_sum;
}

} // namespace

namespace {

/// An in-place all-reduce: each contiguous run of the operands reduced
/// where it lies (Collectives.h), by the device communicator, or else
/// staged through host memory a piece of at most 16 Mi floats at a time.
int32_t allReduceInPlace(infir2rt_context *ctx, const int64_t *desc,
                         const char *where) {
  std::vector<std::pair<float *, int64_t>> runs;
  infir2::rt::inPlaceRuns(
      desc[0] / 2, [&](int64_t i) { return descOperand(ctx, desc, i); },
      runs);
  char error[256] = {0};
  if (deviceCollectives(ctx)) {
    for (auto [data, count] : runs)
      if (ctx->comm->device_all_reduce_sum(ctx->comm->impl, data, count,
                                           ctx->stream, error, sizeof error))
        return setCallError(ctx, where, "%s", error);
    return infir2::rt::cuda::finishLaunch(ctx, where);
  }
  constexpr int64_t kPiece = int64_t(1) << 24;
  std::vector<float> host;
  for (auto [data, count] : runs)
    for (int64_t at = 0; at < count; at += kPiece) {
      int64_t m = std::min(kPiece, count - at);
      host.resize(size_t(m));
      INFIR2_CUDA_CHECK(ctx,
                        cudaMemcpy(host.data(), data + at, m * 4,
                                   cudaMemcpyDeviceToHost),
                        where);
      if (ctx->comm->all_reduce_sum(ctx->comm->impl, host.data(), m, error,
                                    sizeof error) != 0)
        return setCallError(ctx, where,
                            "all-reduce of %lld floats in place failed: %s",
                            (long long)m, error);
      INFIR2_CUDA_CHECK(ctx,
                        cudaMemcpy(data + at, host.data(), m * 4,
                                   cudaMemcpyHostToDevice),
                        where);
    }
  return 0;
}

} // namespace

extern "C" int32_t infir2rt_cuda_all_reduce(infir2rt_context *ctx,
                                            const int64_t *desc,
                                            const char *where) {
  int64_t n = desc[0] / 2, total = 0;
  bool inPlace = true;
  for (int64_t i = 0; i < n; ++i)
    inPlace = inPlace &&
              descOperand(ctx, desc, i).ptr == descOperand(ctx, desc, n + i).ptr;
  if (inPlace) // alone, the sums are already there
    return ctx->comm ? allReduceInPlace(ctx, desc, where) : 0;
  if (deviceCollectives(ctx))
    return onDevice(ctx, desc, where, Collective::AllReduce);
  for (int64_t i = 0; i < n; ++i)
    total += descOperand(ctx, desc, i).numel;
  std::vector<float> bucket(ctx->comm ? total : 0);
  for (int64_t i = 0, at = 0; i < n; ++i) {
    Operand in = descOperand(ctx, desc, i), out = descOperand(ctx, desc, n + i);
    if (ctx->comm) {
      INFIR2_CUDA_CHECK(ctx,
                        cudaMemcpy(bucket.data() + at, in.ptr, in.numel * 4,
                                   cudaMemcpyDeviceToHost),
                        where);
      at += in.numel;
    } else if (in.ptr != out.ptr) {
      INFIR2_CUDA_CHECK(
          ctx,
          cudaMemcpy(out.ptr, in.ptr, in.numel * 4, cudaMemcpyDeviceToDevice),
          where);
    }
  }
  if (!ctx->comm)
    return 0;
  char error[256] = {0};
  if (ctx->comm->all_reduce_sum(ctx->comm->impl, bucket.data(), total, error,
                                sizeof error) != 0)
    return setCallError(ctx, where, "all-reduce of %lld floats failed: %s",
                    (long long)total, error);
  for (int64_t i = 0, at = 0; i < n; ++i) {
    Operand out = descOperand(ctx, desc, n + i);
    INFIR2_CUDA_CHECK(ctx,
                      cudaMemcpy(out.ptr, bucket.data() + at, out.numel * 4,
                                 cudaMemcpyHostToDevice),
                      where);
    at += out.numel;
  }
  return 0;
}

namespace {

/// ZeRO-1's collectives, staged: the bucket's device operands copied to
/// host buffers (operand i whole when `wholeFirst`, else a shard; operand
/// n + i the other), the host collective run on them, the results copied
/// back.
int32_t stagedRowShards(infir2rt_context *ctx, const int64_t *desc,
                        const char *where, bool wholeFirst,
                        int32_t (*collective)(const infir2rt_context *, int64_t,
                                              const std::vector<RowShard> &,
                                              char *, int64_t),
                        const char *what) {
  // wholeFirst: a reduce-scatter (whole tensors in, shards out).
  int64_t n = desc[0] / 2, world = worldSizeOf(desc, wholeFirst);
  std::vector<RowShard> device = deviceRowShards(ctx, desc, wholeFirst);
  std::vector<std::vector<uint8_t>> wholes(n), shards(n);
  std::vector<RowShard> bucket;
  for (int64_t i = 0; i < n; ++i) {
    const RowShard &d = device[i];
    int64_t shardBytes = infir2::rt::shardRows(d.rows, world) * d.rowBytes;
    wholes[i].resize(d.rows * d.rowBytes);
    shards[i].resize(shardBytes);
    INFIR2_CUDA_CHECK(
        ctx,
        cudaMemcpy(wholeFirst ? wholes[i].data() : shards[i].data(),
                   wholeFirst ? d.whole : d.shard,
                   wholeFirst ? wholes[i].size() : shardBytes,
                   cudaMemcpyDeviceToHost),
        where);
    bucket.push_back({wholes[i].data(), shards[i].data(), d.rows, d.rowBytes});
  }
  char error[256] = {0};
  if (collective(ctx, world, bucket, error, sizeof error))
    return setCallError(ctx, where, "%s: %s", what, error);
  for (int64_t i = 0; i < n; ++i) {
    const std::vector<uint8_t> &host = wholeFirst ? shards[i] : wholes[i];
    INFIR2_CUDA_CHECK(ctx,
                      cudaMemcpy(wholeFirst ? device[i].shard : device[i].whole,
                                 host.data(), host.size(),
                                 cudaMemcpyHostToDevice),
                      where);
  }
  return 0;
}

} // namespace

extern "C" int32_t infir2rt_cuda_reduce_scatter(infir2rt_context *ctx,
                                                const int64_t *desc,
                                                const char *where) {
  if (deviceCollectives(ctx))
    return onDevice(ctx, desc, where, Collective::ReduceScatter);
  return stagedRowShards(ctx, desc, where, /*wholeFirst=*/true,
                         reduceScatterHost, "reduce-scatter");
}

extern "C" int32_t infir2rt_cuda_all_gather(infir2rt_context *ctx,
                                            const int64_t *desc,
                                            const char *where) {
  if (deviceCollectives(ctx))
    return onDevice(ctx, desc, where, Collective::AllGather);
  return stagedRowShards(ctx, desc, where, /*wholeFirst=*/false, allGatherHost,
                         "all-gather");
}
