//===- Operand.h - The CPU backend's operands and calls ---------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Internal to the CPU backend (runtime/lib/cpu): what every family's kernels
// share. Kernels read their operands as FP32 (BF16 and FP8 widen exactly),
// compute in FP32 (FP64 for the few reductions whose order would otherwise
// show, noted where), and round once to the result's element type, so a BF16
// tensor really holds BF16 values. Loops over rows, heads and elements use
// OpenMP.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CPU_OPERAND_H
#define INFIR2_RUNTIME_CPU_OPERAND_H

#include "Buffer.h"

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Descriptor.h"
#include "infir2/runtime/FP8.h"
#include "infir2/runtime/Float.h"

#include <cstdarg>
#include <cstring>
#include <vector>

namespace infir2::rt::cpu {

/// A descriptor operand with element access in any storage type.
struct Operand : DescOperand {

  float get(int64_t i) const {
    switch (dtype) {
    case INFIR2RT_F32:
      return reinterpret_cast<const float *>(ptr)[i];
    case INFIR2RT_BF16:
      return bf16ToFloat(reinterpret_cast<const uint16_t *>(ptr)[i]);
    case INFIR2RT_F16:
      return halfToFloat(reinterpret_cast<const uint16_t *>(ptr)[i]);
    case INFIR2RT_F64:
      return float(reinterpret_cast<const double *>(ptr)[i]);
    case INFIR2RT_E4M3:
      return e4m3ToFloat(ptr[i]);
    case INFIR2RT_E5M2:
      return e5m2ToFloat(ptr[i]);
    case INFIR2RT_E8M0:
      return e8m0ToFloat(ptr[i]);
    case INFIR2RT_I32:
      return float(reinterpret_cast<const int32_t *>(ptr)[i]);
    case INFIR2RT_I64:
      return float(reinterpret_cast<const int64_t *>(ptr)[i]);
    default:
      return ptr[i] ? 1.0f : 0.0f;
    }
  }

  int64_t getIndex(int64_t i) const {
    if (dtype == INFIR2RT_I64)
      return reinterpret_cast<const int64_t *>(ptr)[i];
    return reinterpret_cast<const int32_t *>(ptr)[i];
  }

  void set(int64_t i, float v) const {
    switch (dtype) {
    case INFIR2RT_F32:
      reinterpret_cast<float *>(ptr)[i] = v;
      break;
    case INFIR2RT_BF16:
      reinterpret_cast<uint16_t *>(ptr)[i] = floatToBF16(v);
      break;
    case INFIR2RT_F16:
      reinterpret_cast<uint16_t *>(ptr)[i] = floatToHalf(v);
      break;
    case INFIR2RT_F64:
      reinterpret_cast<double *>(ptr)[i] = v;
      break;
    case INFIR2RT_E4M3:
      ptr[i] = floatToE4M3(v);
      break;
    case INFIR2RT_E5M2:
      ptr[i] = floatToE5M2(v);
      break;
    case INFIR2RT_E8M0:
      ptr[i] = floatToE8M0(v);
      break;
    case INFIR2RT_I32:
      reinterpret_cast<int32_t *>(ptr)[i] = int32_t(v);
      break;
    case INFIR2RT_I64:
      reinterpret_cast<int64_t *>(ptr)[i] = int64_t(v);
      break;
    default:
      ptr[i] = v != 0.0f;
    }
  }

  /// The operand as FP32: the storage itself when it is FP32, else a copy.
  const float *floats(Buffer &buffer) const {
    if (dtype == INFIR2RT_F32)
      return reinterpret_cast<const float *>(ptr);
    float *out = buffer.resize(numel);
    if (dtype == INFIR2RT_BF16) { // the common case, kept branch-free
      const uint16_t *in = reinterpret_cast<const uint16_t *>(ptr);
#pragma omp parallel for if (numel > 65536)
      for (int64_t i = 0; i < numel; ++i)
        out[i] = bf16ToFloat(in[i]);
      return out;
    }
#pragma omp parallel for if (numel > 65536)
    for (int64_t i = 0; i < numel; ++i)
      out[i] = get(i);
    return out;
  }

  /// Elements [begin, begin + n) as FP32: the storage itself when it is
  /// FP32, else widened into `buffer` (n floats).
  const float *floats(int64_t begin, int64_t n, float *buffer) const {
    if (dtype == INFIR2RT_F32)
      return reinterpret_cast<const float *>(ptr) + begin;
    if (dtype == INFIR2RT_BF16) {
      const uint16_t *in = reinterpret_cast<const uint16_t *>(ptr) + begin;
      for (int64_t i = 0; i < n; ++i)
        buffer[i] = bf16ToFloat(in[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        buffer[i] = get(begin + i);
    }
    return buffer;
  }

  /// Where to write elements [begin, begin + n) as FP32: the storage itself
  /// when it is FP32, else `buffer` (then store(begin, n, buffer)).
  float *output(int64_t begin, float *buffer) const {
    return dtype == INFIR2RT_F32 ? reinterpret_cast<float *>(ptr) + begin
                                 : buffer;
  }

  /// Rounds elements [begin, begin + n), from output(begin, ...), into the
  /// storage.
  void store(int64_t begin, int64_t n, const float *values) const {
    if (dtype == INFIR2RT_F32)
      return;
    if (dtype == INFIR2RT_BF16) {
      uint16_t *out = reinterpret_cast<uint16_t *>(ptr) + begin;
      for (int64_t i = 0; i < n; ++i)
        out[i] = floatToBF16(values[i]);
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      set(begin + i, values[i]);
  }

  /// A place to write FP32 results: the storage itself when it is FP32,
  /// else `buffer` (then call store()). Zeroed only when `zero` is set, for
  /// kernels that accumulate into their output; otherwise its values are
  /// unspecified until the kernel writes them.
  float *output(Buffer &buffer, bool zero = false) const {
    float *out = dtype == INFIR2RT_F32 ? reinterpret_cast<float *>(ptr)
                                       : buffer.resize(numel);
    if (zero)
      std::memset(out, 0, numel * sizeof(float));
    return out;
  }

  /// Rounds `values` (from output()) into the storage.
  void store(const float *values) const {
    if (dtype == INFIR2RT_F32)
      return;
    if (dtype == INFIR2RT_BF16) {
      uint16_t *out = reinterpret_cast<uint16_t *>(ptr);
#pragma omp parallel for if (numel > 65536)
      for (int64_t i = 0; i < numel; ++i)
        out[i] = floatToBF16(values[i]);
      return;
    }
#pragma omp parallel for if (numel > 65536)
    for (int64_t i = 0; i < numel; ++i)
      set(i, values[i]);
  }
};

/// One call: its operands and attributes, decoded from the descriptor.
struct Call {
  infir2rt_context *ctx;
  const int64_t *desc;
  const char *where;

  int64_t numOperands() const { return descOperandCount(desc); }
  int64_t numAttrs() const { return descAttrCount(desc); }
  Operand operand(int64_t i) const { return {descOperand(ctx, desc, i)}; }
  /// The call's attributes, by name (Attributes.h): A is attrs::<entry>.
  template <typename A> A attrs() const { return rt::attrs::decode<A>(desc); }

  int32_t fail(const char *fmt, ...) const
      __attribute__((format(printf, 2, 3))) {
    va_list args;
    va_start(args, fmt);
    setCallErrorV(ctx, where, fmt, args);
    va_end(args);
    return 1;
  }
};

/// The first of this rank's `rows` rows of a vocabulary split over `shards`
/// tensor-parallel ranks (0 when it is whole); the call fails where the
/// context's group is not of that size.
inline int32_t vocabularyStart(const Call &c, int64_t shards, int64_t rows,
                               int64_t &first) {
  first = 0;
  if (shards == 1)
    return 0;
  const infir2rt_communicator *tp = c.ctx->tp_comm;
  if (!tp || tp->size != shards)
    return c.fail("the vocabulary is split over %lld tensor-parallel ranks, "
                  "and this context's group has %d",
                  (long long)shards, tp ? int(tp->size) : 1);
  first = int64_t(tp->rank) * rows;
  return 0;
}

/// A gradient's accumulator `acc` for `out` (reduce_sum, rms_norm_grad,
/// embedding_grad): both FP32, of one size; else the call fails.
inline int32_t checkAccumulator(const Call &c, const Operand &acc,
                                const Operand &out) {
  if (acc.dtype != INFIR2RT_F32 || out.dtype != INFIR2RT_F32 ||
      acc.numel != out.numel)
    return c.fail("%s", "a gradient accumulates into an f32 result of the "
                        "accumulator's type and size");
  return 0;
}

/// FP64 sums for `out` (reduce_sum, rms_norm_grad's weight gradient): zero,
/// or the accumulator's values (operand `at`, when the call has one) to add
/// to, once checkAccumulator accepts it.
inline int32_t startSums(const Call &c, bool hasAcc, int64_t at,
                         const Operand &out, std::vector<double> &sums) {
  sums.assign(size_t(out.numel), 0.0);
  if (!hasAcc)
    return 0;
  Operand from = c.operand(at);
  if (int32_t rc = checkAccumulator(c, from, out))
    return rc;
  for (int64_t i = 0; i < out.numel; ++i)
    sums[i] = from.get(i);
  return 0;
}

/// The CPU version of every entry point of ABI.def, defined in the file of
/// its family; infir2rt_<name> (Entries.cpp) runs it unless the context's
/// regions live on a device.
#define INFIR2RT_ENTRY(name, operands, attributes, doc) int32_t name(const Call &c);
#include "infir2/runtime/ABI.def"

} // namespace infir2::rt::cpu

#endif // INFIR2_RUNTIME_CPU_OPERAND_H
