//===- Collectives.h - Buckets of the data-parallel collectives -*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The host side of the collectives, shared by every backend (the CUDA one
// stages its device buffers through host memory): packing a bucket of
// tensors into the one buffer the communicator reduces or gathers, and the
// row sharding of ZeRO-1. Rank r of `world` owns the rows
// [r·s, min(rows, (r+1)·s)) of a tensor, s = ceil(rows / world); shards
// past the last row are zero padding, so that every rank's shard has the
// same size.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_COLLECTIVES_H
#define INFIR2_RUNTIME_COLLECTIVES_H

#include "infir2/runtime/ABI.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

namespace infir2::rt {

/// The contiguous runs of an in-place all-reduce's `n` FP32 operands
/// (`operand(i)` gives each, in the order the compiler laid them out):
/// neighbours whose gap is padding (under 64 bytes, whole floats) join one
/// run, so that the communicator reduces each run where it lies. The
/// padding between gradient accumulators is zeroed with them, on every
/// rank, so it sums to zero.
template <typename OperandAt>
void inPlaceRuns(int64_t n, OperandAt operand,
                 std::vector<std::pair<float *, int64_t>> &runs) {
  for (int64_t i = 0; i < n;) {
    uint8_t *start = operand(i).ptr;
    uint8_t *end = start + operand(i).numel * 4;
    int64_t j = i + 1;
    for (; j < n; ++j) {
      uint8_t *next = operand(j).ptr;
      if (next < end || next - end >= 64 || (next - end) % 4)
        break;
      end = next + operand(j).numel * 4;
    }
    runs.push_back({reinterpret_cast<float *>(start), (end - start) / 4});
    i = j;
  }
}

/// One tensor of a ZeRO-1 bucket: the whole tensor and this rank's shard,
/// both in host memory.
struct RowShard {
  uint8_t *whole;
  uint8_t *shard;
  int64_t rows, rowBytes;
};

inline int64_t shardRows(int64_t rows, int64_t world) {
  return (rows + world - 1) / world;
}

/// The number of `t`'s real (not padding) rows that rank `r` owns.
inline int64_t ownedRows(const RowShard &t, int64_t world, int64_t r) {
  int64_t s = shardRows(t.rows, world);
  return std::max<int64_t>(0, std::min(t.rows, (r + 1) * s) - r * s);
}

/// The bytes each rank holds of a bucket: its shards, one after the other.
inline int64_t shardBytes(const std::vector<RowShard> &bucket, int64_t world) {
  int64_t n = 0;
  for (const RowShard &t : bucket)
    n += shardRows(t.rows, world) * t.rowBytes;
  return n;
}

/// The whole tensors as `world` consecutive blocks of shardBytes() bytes,
/// block r holding rank r's shards. `copy(dst, src, bytes)` moves bytes
/// (in host or device memory); the padding keeps what `out` held (zeros).
template <typename Copy>
void packByRank(const std::vector<RowShard> &bucket, int64_t world,
                uint8_t *out, Copy copy) {
  int64_t block = shardBytes(bucket, world);
  for (int64_t r = 0; r < world; ++r) {
    uint8_t *at = out + r * block;
    for (const RowShard &t : bucket) {
      int64_t s = shardRows(t.rows, world);
      copy(at, t.whole + r * s * t.rowBytes,
           ownedRows(t, world, r) * t.rowBytes);
      at += s * t.rowBytes;
    }
  }
}

/// The inverse of packByRank: each whole tensor from the ranks' blocks.
template <typename Copy>
void unpackByRank(const uint8_t *in, const std::vector<RowShard> &bucket,
                  int64_t world, Copy copy) {
  int64_t block = shardBytes(bucket, world);
  for (int64_t r = 0; r < world; ++r) {
    const uint8_t *at = in + r * block;
    for (const RowShard &t : bucket) {
      int64_t s = shardRows(t.rows, world);
      copy(t.whole + r * s * t.rowBytes, at,
           ownedRows(t, world, r) * t.rowBytes);
      at += s * t.rowBytes;
    }
  }
}

/// This rank's shards as one block, one after the other: from `block` into
/// the shards (`toShards`), or from the shards into `block`.
template <typename Copy>
void moveShards(uint8_t *block, const std::vector<RowShard> &bucket,
                int64_t world, bool toShards, Copy copy) {
  for (const RowShard &t : bucket) {
    int64_t bytes = shardRows(t.rows, world) * t.rowBytes;
    if (toShards)
      copy(t.shard, block, bytes);
    else
      copy(block, t.shard, bytes);
    block += bytes;
  }
}

inline void hostCopy(void *dst, const void *src, int64_t bytes) {
  std::memcpy(dst, src, size_t(bytes));
}

/// A tensor split along `dim` over a tensor-parallel group of `size`
/// (tp_all_gather's input, tp_reduce_scatter's output: `slice` of `whole`),
/// as `outer` rows of `run` elements (the slice's part of dimension `dim`
/// and everything after it); 1, with `error`, where the shapes are not such
/// a split. `Shaped` is a backend's operand (rank, dim(i), numel).
template <typename Shaped>
int32_t splitAlong(const Shaped &slice, const Shaped &whole, int64_t dim,
                   int size, int64_t &outer, int64_t &run, char *error,
                   int64_t errorSize) {
  if (dim >= slice.rank || slice.dim(dim) * size != whole.dim(dim)) {
    std::snprintf(
        error, size_t(errorSize),
        "dimension %lld of %lld values is not a group of %d's slice of %lld",
        (long long)dim, (long long)(dim < slice.rank ? slice.dim(dim) : 0),
        size, (long long)(dim < whole.rank ? whole.dim(dim) : 0));
    return 1;
  }
  outer = 1;
  for (int64_t i = 0; i < dim; ++i)
    outer *= slice.dim(i);
  run = outer ? slice.numel / outer : 0;
  return 0;
}

/// Checks that a ZeRO-1 step compiled for `world` ranks runs on as many.
inline int32_t checkWorldSize(const infir2rt_context *ctx, int64_t world,
                              char *error, int64_t errorSize) {
  int64_t size = ctx->comm ? ctx->comm->size : 1;
  if (size == world)
    return 0;
  std::snprintf(error, size_t(errorSize),
                "the step was compiled with ZeRO-1 for %lld ranks, but runs on "
                "%lld",
                (long long)world, (long long)size);
  return 1;
}

/// ZeRO-1's gradient reduce-scatter on host buffers of FP32 tensors: each
/// shard gets this rank's rows of the sum over the ranks of the wholes.
inline int32_t reduceScatterHost(const infir2rt_context *ctx, int64_t world,
                                 const std::vector<RowShard> &bucket,
                                 char *error, int64_t errorSize) {
  if (checkWorldSize(ctx, world, error, errorSize))
    return 1;
  int64_t block = shardBytes(bucket, world);
  std::vector<uint8_t> send(block * world), recv(block);
  packByRank(bucket, world, send.data(), hostCopy);
  if (!ctx->comm)
    recv.assign(send.begin(), send.begin() + block);
  else if (ctx->comm->reduce_scatter_sum(
               ctx->comm->impl, reinterpret_cast<const float *>(send.data()),
               reinterpret_cast<float *>(recv.data()), block / 4, error,
               errorSize))
    return 1;
  moveShards(recv.data(), bucket, world, /*toShards=*/true, hostCopy);
  return 0;
}

/// ZeRO-1's weight all-gather on host buffers: each whole tensor from every
/// rank's shard.
inline int32_t allGatherHost(const infir2rt_context *ctx, int64_t world,
                             const std::vector<RowShard> &bucket, char *error,
                             int64_t errorSize) {
  if (checkWorldSize(ctx, world, error, errorSize))
    return 1;
  int64_t block = shardBytes(bucket, world);
  std::vector<uint8_t> send(block), recv(block * world);
  moveShards(send.data(), bucket, world, /*toShards=*/false, hostCopy);
  if (!ctx->comm)
    recv = send;
  else if (ctx->comm->all_gather(ctx->comm->impl, send.data(), recv.data(),
                                 block, error, errorSize))
    return 1;
  unpackByRank(recv.data(), bucket, world, hostCopy);
  return 0;
}

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_COLLECTIVES_H
