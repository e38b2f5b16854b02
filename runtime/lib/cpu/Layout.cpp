//===- Layout.cpp - Data movement and lookups on the CPU ------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// copy (converting between element types, rounding to nearest even), fill,
// transpose, embedding and its gradient (token ids checked), reduce_sum (FP64
// sums).
//
//===----------------------------------------------------------------------===//

#include "Operand.h"
#include "Transpose.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace infir2::rt::cpu {

int32_t copy(const Call &c) {
  Operand in = c.operand(0), out = c.operand(1);
  int64_t n = in.numel;
  if (in.dtype == out.dtype) {
    if (in.ptr == out.ptr)
      return 0;
    int64_t bytes = n * infir2rt_dtype_size(in.dtype);
    if (in.ptr < out.ptr + bytes && out.ptr < in.ptr + bytes) {
      std::memmove(out.ptr, in.ptr, bytes); // overlapping: one pass
      return 0;
    }
    // Large copies (gradient accumulators, weights) in one slice per thread.
    int64_t chunk = int64_t(1) << 20;
#pragma omp parallel for if (bytes > 2 * chunk)
    for (int64_t at = 0; at < bytes; at += chunk)
      std::memcpy(out.ptr + at, in.ptr + at, std::min(chunk, bytes - at));
    return 0;
  }
  // The conversions every step makes (FP32 masters to BF16 weights, and
  // back), without the per-element dispatch of set() / get().
  if (in.dtype == INFIR2RT_F32 && out.dtype == INFIR2RT_BF16) {
    const float *x = reinterpret_cast<const float *>(in.ptr);
    uint16_t *y = reinterpret_cast<uint16_t *>(out.ptr);
#pragma omp parallel for simd if (n > 65536)
    for (int64_t i = 0; i < n; ++i)
      y[i] = floatToBF16(x[i]);
    return 0;
  }
  if (in.dtype == INFIR2RT_BF16 && out.dtype == INFIR2RT_F32) {
    const uint16_t *x = reinterpret_cast<const uint16_t *>(in.ptr);
    float *y = reinterpret_cast<float *>(out.ptr);
#pragma omp parallel for simd if (n > 65536)
    for (int64_t i = 0; i < n; ++i)
      y[i] = bf16ToFloat(x[i]);
    return 0;
  }
#pragma omp parallel for if (n > 65536)
  for (int64_t i = 0; i < n; ++i)
    out.set(i, in.get(i));
  return 0;
}

int32_t fill(const Call &c) {
  Operand out = c.operand(0);
  float v = float(c.attrs<attrs::fill>().value);
  for (int64_t i = 0; i < out.numel; ++i)
    out.set(i, v);
  return 0;
}

int32_t transpose(const Call &c) {
  Operand in = c.operand(0), out = c.operand(1);
  int64_t rank = in.rank;
  std::vector<int64_t> perm = c.attrs<attrs::transpose>().permutation.values();
  // The common case: the last two dimensions swapped, the others kept.
  bool lastTwo =
      rank >= 2 && perm[rank - 1] == rank - 2 && perm[rank - 2] == rank - 1;
  for (int64_t i = 0; lastTwo && i + 2 < rank; ++i)
    lastTwo = perm[i] == i;
  int64_t elementBytes = infir2rt_dtype_size(in.dtype);
  if (lastTwo && (elementBytes == 1 || elementBytes == 2 || elementBytes == 4)) {
    int64_t rows = in.dim(-2), cols = in.dim(-1),
            batch = in.numel / std::max<int64_t>(1, rows * cols);
    if (elementBytes == 1)
      transposeLastTwo(in.ptr, out.ptr, batch, rows, cols);
    else if (elementBytes == 2)
      transposeLastTwo(reinterpret_cast<const uint16_t *>(in.ptr),
                       reinterpret_cast<uint16_t *>(out.ptr), batch, rows,
                       cols);
    else
      transposeLastTwo(reinterpret_cast<const uint32_t *>(in.ptr),
                       reinterpret_cast<uint32_t *>(out.ptr), batch, rows,
                       cols);
    return 0;
  }
  std::vector<int64_t> inStride(rank, 1), idx(rank, 0);
  for (int64_t i = rank - 2; i >= 0; --i)
    inStride[i] = inStride[i + 1] * in.shape[i + 1];
  int64_t size = infir2rt_dtype_size(in.dtype);
  for (int64_t flat = 0; flat < out.numel; ++flat) {
    int64_t src = 0;
    for (int64_t i = 0; i < rank; ++i)
      src += idx[i] * inStride[perm[i]];
    std::memcpy(out.ptr + flat * size, in.ptr + src * size, size);
    for (int64_t i = rank - 1; i >= 0; --i) {
      if (++idx[i] < out.shape[i])
        break;
      idx[i] = 0;
    }
  }
  return 0;
}

int32_t embedding(const Call &c) {
  Operand table = c.operand(0), ids = c.operand(1), out = c.operand(2);
  int64_t vocab = table.dim(0), dim = table.dim(1), first = 0;
  int64_t shards = c.attrs<attrs::embedding>().vocab_shards;
  if (int32_t rc = vocabularyStart(c, shards, vocab, first))
    return rc;
  int64_t size = infir2rt_dtype_size(table.dtype);
  for (int64_t t = 0; t < ids.numel; ++t) {
    int64_t id = ids.getIndex(t);
    if (id < 0 || id >= vocab * shards)
      return c.fail("token id %lld at position %lld is out of range [0, %lld)",
                    (long long)id, (long long)t, (long long)(vocab * shards));
    id -= first;
    if (id < 0 || id >= vocab) // another rank's row: zero here
      for (int64_t i = 0; i < dim; ++i)
        out.set(t * dim + i, 0.0f);
    else if (table.dtype == out.dtype)
      std::memcpy(out.ptr + t * dim * size, table.ptr + id * dim * size,
                  dim * size);
    else
      for (int64_t i = 0; i < dim; ++i)
        out.set(t * dim + i, table.get(id * dim + i));
  }
  return 0;
}

int32_t embedding_grad(const Call &c) {
  Operand ids = c.operand(0), dy = c.operand(1), out = c.operand(2);
  int64_t vocab = out.dim(0), dim = out.dim(1), first = 0;
  int64_t shards = c.attrs<attrs::embedding_grad>().vocab_shards;
  if (int32_t rc = vocabularyStart(c, shards, vocab, first))
    return rc;
  // This rank's tokens (all of them, unless the vocabulary is split).
  std::vector<int64_t> order;
  order.reserve(ids.numel);
  for (int64_t t = 0; t < ids.numel; ++t) {
    int64_t id = ids.getIndex(t);
    if (id < 0 || id >= vocab * shards)
      return c.fail("token id %lld at position %lld is out of range [0, %lld)",
                    (long long)id, (long long)t, (long long)(vocab * shards));
    if (id >= first && id < first + vocab)
      order.push_back(t);
  }
  int64_t n = int64_t(order.size());
  // Tokens grouped by id, in position order within an id: each row of the
  // result is its tokens' rows summed in FP32 in that order, after the
  // accumulator's row when there is one, then rounded once; the other rows
  // are zero, or the accumulator's. No FP32 copy of the whole table.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return ids.getIndex(a) < ids.getIndex(b);
  });
  bool hasAcc = c.attrs<attrs::embedding_grad>().has_acc;
  if (hasAcc)
    if (int32_t rc = checkAccumulator(c, c.operand(3), out))
      return rc;
  const uint8_t *from = hasAcc ? c.operand(3).ptr : nullptr;
  int64_t bytes = out.numel * infir2rt_dtype_size(out.dtype);
  int64_t chunk = int64_t(1) << 22;
  if (from != out.ptr) { // (an accumulator written in place is there)
#pragma omp parallel for if (bytes > 2 * chunk)
    for (int64_t at = 0; at < bytes; at += chunk) {
      int64_t size = std::min(chunk, bytes - at);
      if (from)
        std::memcpy(out.ptr + at, from + at, size);
      else
        std::memset(out.ptr + at, 0, size);
    }
  }
  Buffer bd;
  const float *D = dy.floats(bd);
  std::vector<float> sum(dim);
  for (int64_t g = 0; g < n;) {
    int64_t id = ids.getIndex(order[g]), row = id - first;
    for (int64_t i = 0; i < dim; ++i)
      sum[i] = hasAcc ? out.get(row * dim + i) : 0.0f;
    for (; g < n && ids.getIndex(order[g]) == id; ++g)
      for (int64_t i = 0; i < dim; ++i)
        sum[i] += D[order[g] * dim + i];
    for (int64_t i = 0; i < dim; ++i)
      out.set(row * dim + i, sum[i]);
  }
  return 0;
}

int32_t cache_write(const Call &c) {
  Operand update = c.operand(0), cache = c.operand(1), pos = c.operand(2),
          out = c.operand(3);
  int64_t batch = cache.dim(0), length = cache.dim(1), t = update.dim(1);
  int64_t row = cache.last() * infir2rt_dtype_size(cache.dtype);
  for (int64_t i = 0; i < batch * t; ++i)
    if (int64_t p = pos.getIndex(i); p < 0 || p >= length)
      return c.fail("position %lld of new row %lld is outside the cache's "
                    "%lld rows",
                    (long long)p, (long long)i, (long long)length);
  // In place when the planner gave the result the cache's buffer.
  if (out.ptr != cache.ptr)
    std::memcpy(out.ptr, cache.ptr, batch * length * row);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < t; ++s)
      std::memcpy(out.ptr + (b * length + pos.getIndex(b * t + s)) * row,
                  update.ptr + (b * t + s) * row, row);
  return 0;
}

/// One group of reduce_sum: operands `at` (input), `at + 1` (out) and,
/// `hasAcc`, the accumulator `at + 2`.
static int32_t reduceSumGroup(const Call &c, int64_t at, bool hasAcc) {
  Operand x = c.operand(at), out = c.operand(at + 1);
  Buffer bx;
  const float *X = x.floats(bx);
  int64_t n = out.numel, rows = x.numel / n;
  std::vector<double> acc; // from the accumulator, when there is one
  if (int32_t rc = startSums(c, hasAcc, at + 2, out, acc))
    return rc;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i)
      acc[i] += X[r * n + i];
  for (int64_t i = 0; i < n; ++i)
    out.set(i, float(acc[i]));
  return 0;
}

int32_t reduce_sum(const Call &c) {
  // Groups of (input, out[, acc]), each independent of the others; every
  // accumulator is checked before anything is written.
  bool hasAcc = c.attrs<attrs::reduce_sum>().has_acc;
  int64_t size = hasAcc ? 3 : 2;
  if (hasAcc)
    for (int64_t g = 0; g < c.numOperands(); g += size)
      if (int32_t rc = checkAccumulator(c, c.operand(g + 2), c.operand(g + 1)))
        return rc;
  for (int64_t g = 0; g < c.numOperands(); g += size)
    if (int32_t rc = reduceSumGroup(c, g, hasAcc))
      return rc;
  return 0;
}

} // namespace infir2::rt::cpu
