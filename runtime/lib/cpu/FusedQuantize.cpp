//===- FusedQuantize.cpp - Producers with FP8 output on the CPU -----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// rms_norm_quantize_dual and swiglu_quantize_dual: on the CPU they run as
// their two calls, the producer's and quantize_dual's (the CUDA backend fuses
// them into the producer's kernel).
//
//===----------------------------------------------------------------------===//

#include "Operand.h"

#include "infir2/runtime/Descriptor.h"

#include <initializer_list>
#include <vector>

namespace infir2::rt::cpu {

namespace {

int32_t producerThenQuantizeDual(const Call &c,
                                 int32_t (*producer)(const Call &),
                                 std::initializer_list<int64_t> operands,
                                 int64_t producerAttrs) {
  int64_t out = *(operands.end() - 1);
  std::vector<int64_t> first =
      subDescriptor(c.desc, operands, 0, producerAttrs);
  std::vector<int64_t> second =
      subDescriptor(c.desc, {out, out + 1, out + 2, out + 3, out + 4},
                    producerAttrs, c.numAttrs() - producerAttrs);
  if (int32_t rc = producer(Call{c.ctx, first.data(), c.where}))
    return rc;
  return quantize_dual(Call{c.ctx, second.data(), c.where});
}

} // namespace

int32_t rms_norm_quantize_dual(const Call &c) {
  return producerThenQuantizeDual(c, rms_norm, {0, 1, 2}, 1);
}

int32_t swiglu_quantize_dual(const Call &c) {
  return producerThenQuantizeDual(c, swiglu, {0, 1, 2}, 0);
}

} // namespace infir2::rt::cpu
