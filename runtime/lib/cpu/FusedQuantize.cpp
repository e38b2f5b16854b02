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

/// The producer's call on operands (a, b, out), then quantize_dual's on
/// (out, data, scale, data_t, scale_t): the fused call's operands in order.
int32_t producerThenQuantizeDual(const Call &c,
                                 int32_t (*producer)(const Call &),
                                 const std::vector<double> &producerAttrs,
                                 const attrs::quantize_dual &quantize) {
  std::vector<int64_t> first = subDescriptor(c.desc, {0, 1, 2}, producerAttrs);
  std::vector<int64_t> second =
      subDescriptor(c.desc, {2, 3, 4, 5, 6}, attrs::encoded(quantize));
  if (int32_t rc = producer(Call{c.ctx, first.data(), c.where}))
    return rc;
  return quantize_dual(Call{c.ctx, second.data(), c.where});
}

} // namespace

int32_t rms_norm_quantize_dual(const Call &c) {
  auto a = c.attrs<attrs::rms_norm_quantize_dual>();
  attrs::rms_norm norm;
  norm.epsilon = a.epsilon;
  return producerThenQuantizeDual(c, rms_norm, attrs::encoded(norm),
                                  attrs::quantizePart(a));
}

int32_t swiglu_quantize_dual(const Call &c) {
  auto a = c.attrs<attrs::swiglu_quantize_dual>();
  return producerThenQuantizeDual(c, swiglu, attrs::encoded(attrs::swiglu{}),
                                  attrs::quantizePart(a));
}

} // namespace infir2::rt::cpu
