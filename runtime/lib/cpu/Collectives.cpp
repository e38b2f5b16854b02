//===- Collectives.cpp - Data-parallel collectives on the CPU -------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// all_reduce, reduce_scatter and all_gather over the context's communicator,
// one bucket per call (Collectives.h), or copies when the trainer runs alone;
// tp_reduce, tp_all_gather and tp_reduce_scatter over the tensor-parallel
// group.
//
//===----------------------------------------------------------------------===//

#include "Operand.h"

#include "infir2/runtime/Collectives.h"

#include <cstring>
#include <memory>
#include <vector>

namespace infir2::rt::cpu {

int32_t all_reduce(const Call &c) {
  int64_t n = c.numOperands() / 2, total = 0;
  bool inPlace = true;
  for (int64_t i = 0; i < n; ++i) {
    total += c.operand(i).numel;
    inPlace = inPlace && c.operand(i).ptr == c.operand(n + i).ptr;
  }
  if (!c.ctx->comm) { // one rank: the sums are the operands
    for (int64_t i = 0; i < n; ++i)
      if (c.operand(i).ptr != c.operand(n + i).ptr)
        std::memcpy(c.operand(n + i).ptr, c.operand(i).ptr,
                    c.operand(i).numel * sizeof(float));
    return 0;
  }
  char error[256] = {0};
  if (inPlace) { // each contiguous run reduced where it lies
    std::vector<std::pair<float *, int64_t>> runs;
    inPlaceRuns(n, [&](int64_t i) { return c.operand(i); }, runs);
    for (auto [data, count] : runs)
      if (c.ctx->comm->all_reduce_sum(c.ctx->comm->impl, data, count, error,
                                      sizeof error) != 0)
        return c.fail("all-reduce of %lld floats in place failed: %s",
                      (long long)count, error);
    return 0;
  }
  // One bucket, one collective call.
  Buffer bucket(total);
  for (int64_t i = 0, at = 0; i < n; at += c.operand(i).numel, ++i)
    std::memcpy(bucket.data() + at, c.operand(i).ptr,
                c.operand(i).numel * sizeof(float));
  if (c.ctx->comm->all_reduce_sum(c.ctx->comm->impl, bucket.data(), total,
                                  error, sizeof error) != 0)
    return c.fail("all-reduce of %lld floats failed: %s", (long long)total,
                  error);
  for (int64_t i = 0, at = 0; i < n; at += c.operand(i).numel, ++i)
    std::memcpy(c.operand(n + i).ptr, bucket.data() + at,
                c.operand(i).numel * sizeof(float));
  return 0;
}

int32_t tp_reduce(const Call &c) {
  if (!c.ctx->tp_comm) // a shard's partial sum is not the sum
    return c.fail("a tensor-parallel step runs on its group, and this context "
                  "has none");
  Operand in = c.operand(0), out = c.operand(1);
  Buffer staged;
  // The sum in FP32 (a BF16 partial widened exactly), rounded once.
  float *sum = staged.resize(in.numel);
  Buffer widened;
  std::memcpy(sum, in.floats(widened), in.numel * sizeof(float));
  char error[256] = {0};
  if (c.ctx->tp_comm->all_reduce_sum(c.ctx->tp_comm->impl, sum, in.numel, error,
                                     sizeof error) != 0)
    return c.fail("tensor-parallel all-reduce of %lld values failed: %s",
                  (long long)in.numel, error);
  Buffer result;
  float *o = out.output(result);
  std::memcpy(o, sum, in.numel * sizeof(float));
  out.store(o);
  return 0;
}

namespace {

/// A sequence collective's group and the geometry of its split
/// (splitAlong, Collectives.h).
struct SequenceSplit {
  const infir2rt_communicator *tp = nullptr;
  int64_t outer = 1, run = 1;
};

int32_t sequenceSplit(const Call &c, const Operand &slice, const Operand &whole,
                      int64_t dim, SequenceSplit &s) {
  s.tp = c.ctx->tp_comm;
  if (!s.tp)
    return c.fail("a tensor-parallel step runs on its group, and this "
                  "context has none");
  char error[256] = {0};
  if (splitAlong(slice, whole, dim, s.tp->size, s.outer, s.run, error,
                 sizeof error))
    return c.fail("%s", error);
  return 0;
}

} // namespace

int32_t tp_all_gather(const Call &c) {
  Operand in = c.operand(0), out = c.operand(1);
  SequenceSplit s;
  if (int32_t rc =
          sequenceSplit(c, in, out, c.attrs<attrs::tp_all_gather>().dim, s))
    return rc;
  int64_t esize = infir2rt_dtype_size(in.dtype), bytes = in.numel * esize;
  // (Not zeroed: the gather writes all of it.)
  std::unique_ptr<uint8_t[]> all(new uint8_t[size_t(bytes * s.tp->size)]);
  char error[256] = {0};
  if (s.tp->all_gather(s.tp->impl, in.ptr, all.get(), bytes, error,
                       sizeof error) != 0)
    return c.fail("tensor-parallel all-gather of %lld bytes failed: %s",
                  (long long)bytes, error);
  // Rank r's rows go to slice r of each outer row.
  int64_t run = s.run * esize;
  for (int64_t r = 0; r < s.tp->size; ++r)
    for (int64_t o = 0; o < s.outer; ++o)
      std::memcpy(out.ptr + (o * s.tp->size + r) * run,
                  all.get() + r * bytes + o * run, size_t(run));
  return 0;
}

int32_t tp_reduce_scatter(const Call &c) {
  Operand in = c.operand(0), out = c.operand(1);
  SequenceSplit s;
  if (int32_t rc =
          sequenceSplit(c, out, in, c.attrs<attrs::tp_reduce_scatter>().dim, s))
    return rc;
  // Slice r of each outer row to block r, in FP32 (a BF16 partial widened
  // exactly); the sum rounded once into this rank's slice.
  Buffer widened, staged, result;
  const float *x = in.floats(widened);
  float *send = staged.resize(in.numel);
  for (int64_t r = 0; r < s.tp->size; ++r)
    for (int64_t o = 0; o < s.outer; ++o)
      std::memcpy(send + (r * s.outer + o) * s.run,
                  x + (o * s.tp->size + r) * s.run,
                  size_t(s.run) * sizeof(float));
  float *o = out.output(result);
  char error[256] = {0};
  if (s.tp->reduce_scatter_sum(s.tp->impl, send, o, out.numel, error,
                               sizeof error) != 0)
    return c.fail("tensor-parallel reduce-scatter of %lld values failed: %s",
                  (long long)in.numel, error);
  out.store(o);
  return 0;
}

namespace {

/// ZeRO-1's bucket: operand i is a whole tensor (`wholeFirst`) or a shard,
/// operand n + i the other.
std::vector<RowShard> rowShards(const Call &c, bool wholeFirst) {
  int64_t n = c.numOperands() / 2;
  std::vector<RowShard> bucket;
  for (int64_t i = 0; i < n; ++i) {
    Operand a = c.operand(i), b = c.operand(n + i);
    Operand whole = wholeFirst ? a : b;
    bucket.push_back(
        {whole.ptr, (wholeFirst ? b : a).ptr, whole.dim(0),
         whole.numel / whole.dim(0) * infir2rt_dtype_size(whole.dtype)});
  }
  return bucket;
}

} // namespace

int32_t reduce_scatter(const Call &c) {
  char error[256] = {0};
  if (reduceScatterHost(c.ctx, c.attrs<attrs::reduce_scatter>().world_size,
                        rowShards(c, true), error, sizeof error))
    return c.fail("reduce-scatter: %s", error);
  return 0;
}

int32_t all_gather(const Call &c) {
  char error[256] = {0};
  if (allGatherHost(c.ctx, c.attrs<attrs::all_gather>().world_size,
                    rowShards(c, false), error, sizeof error))
    return c.fail("all-gather: %s", error);
  return 0;
}

} // namespace infir2::rt::cpu
