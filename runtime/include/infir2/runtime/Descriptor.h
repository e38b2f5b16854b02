//===- Descriptor.h - Reading a call's descriptor (ABI.h) -------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// What every backend's entry point does first: find its operands and
// attribute values in the descriptor the compiled step passes (the layout is
// in ABI.h), and report failures in the context. Host code only: the CUDA
// backend reads descriptors on the host and passes pointers to its kernels.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DESCRIPTOR_H
#define INFIR2_RUNTIME_DESCRIPTOR_H

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Attributes.h"
#include "infir2/runtime/Error.h"

#include <cstdarg>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace infir2::rt {

/// One operand: where it is (in the context's regions) and what it holds.
struct DescOperand {
  uint8_t *ptr;
  int64_t dtype, rank, numel;
  const int64_t *shape;

  int64_t dim(int64_t i) const { return shape[i < 0 ? rank + i : i]; }
  int64_t last() const { return shape[rank - 1]; }
  int64_t rows() const { return rank ? numel / last() : 1; }
};

inline int64_t descOperandCount(const int64_t *desc) { return desc[0]; }
inline int64_t descAttrCount(const int64_t *desc) { return desc[1]; }

inline DescOperand descOperand(const infir2rt_context *ctx, const int64_t *desc,
                               int64_t i) {
  const int64_t *w = desc + 2 + i * INFIR2RT_OPERAND_WORDS;
  return {ctx->regions[w[0]] + w[3], w[1], w[2], w[4], w + 5};
}

inline double descAttr(const int64_t *desc, int64_t i) {
  double d;
  std::memcpy(&d, desc + 2 + desc[0] * INFIR2RT_OPERAND_WORDS + i, sizeof d);
  return d;
}

/// The descriptor of a call on some of `desc`'s operands (in the order
/// given) and `count` of its attributes from `first`: an entry point that
/// composes others (a fused producer and its quantization) calls them with
/// these.
/// A gradient's accumulator for `out` (reduce_sum, rms_norm_grad,
/// embedding_grad on a device): operand `at` when the call has one
/// (`hasAcc`, its has_acc attribute), both FP32 of one size. `*acc` is null
/// without one; non-zero with the call's error set when it does not fit.
inline int32_t gradientAccumulator(infir2rt_context *ctx, const int64_t *desc,
                                   bool hasAcc, int64_t at,
                                   const DescOperand &out, const char *where,
                                   const uint8_t **acc) {
  *acc = nullptr;
  if (!hasAcc)
    return 0;
  DescOperand a = descOperand(ctx, desc, at);
  if (a.dtype != INFIR2RT_F32 || out.dtype != INFIR2RT_F32 ||
      a.numel != out.numel)
    return setCallError(ctx, where, "%s",
                        "a gradient accumulates into an f32 result of the "
                        "accumulator's type and size");
  *acc = a.ptr;
  return 0;
}

inline std::vector<int64_t>
subDescriptor(const int64_t *desc, std::initializer_list<int64_t> operands,
              int64_t first, int64_t count) {
  std::vector<int64_t> out = {int64_t(operands.size()), count};
  for (int64_t i : operands) {
    const int64_t *w = desc + 2 + i * INFIR2RT_OPERAND_WORDS;
    out.insert(out.end(), w, w + INFIR2RT_OPERAND_WORDS);
  }
  const int64_t *attrs = desc + 2 + desc[0] * INFIR2RT_OPERAND_WORDS;
  out.insert(out.end(), attrs + first, attrs + first + count);
  return out;
}

/// The descriptor of a call on some of `desc`'s operands (in the order
/// given) with the attribute words `attrs` (Attributes.h's encoded()).
inline std::vector<int64_t>
subDescriptor(const int64_t *desc, std::initializer_list<int64_t> operands,
              const std::vector<double> &attrs) {
  std::vector<int64_t> out = subDescriptor(desc, operands, 0, 0);
  out[1] = int64_t(attrs.size());
  for (double a : attrs) {
    int64_t w;
    std::memcpy(&w, &a, sizeof w);
    out.push_back(w);
  }
  return out;
}

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DESCRIPTOR_H
