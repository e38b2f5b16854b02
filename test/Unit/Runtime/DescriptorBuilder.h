//===- DescriptorBuilder.h - Runtime calls for the runtime's tests -*- C++
//-*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Builds what a compiled step passes to a runtime entry point: operands in
// one host buffer (region 0) and a descriptor addressing them (ABI.h).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TEST_UNIT_RUNTIME_DESCRIPTORBUILDER_H
#define INFIR2_TEST_UNIT_RUNTIME_DESCRIPTORBUILDER_H

#include "infir2/runtime/ABI.h"

#include <cstring>
#include <utility>
#include <vector>

namespace infir2::test {

/// Operands in one host buffer, and a descriptor addressing them.
struct Call {
  std::vector<uint8_t> host;
  std::vector<int64_t> desc = {0, 0};
  std::vector<std::pair<int64_t, int64_t>> operands; // (offset, bytes)

  /// Adds an operand of `shape` with `dtype` (ABI.h); returns its index.
  int add(std::vector<int64_t> shape, int64_t dtype) {
    int64_t numel = 1;
    for (int64_t d : shape)
      numel *= d;
    int64_t offset = (host.size() + 255) / 256 * 256,
            bytes = numel * infir2rt_dtype_size(dtype);
    host.resize(offset + bytes);
    std::vector<int64_t> words = {INFIR2RT_STATE, dtype, int64_t(shape.size()),
                                  offset, numel};
    for (int i = 0; i < INFIR2RT_MAX_RANK; ++i)
      words.push_back(i < int(shape.size()) ? shape[i] : 1);
    desc.insert(desc.begin() + 2 + desc[0] * INFIR2RT_OPERAND_WORDS,
                words.begin(), words.end());
    ++desc[0];
    operands.push_back({offset, bytes});
    return operands.size() - 1;
  }
  void attrs(std::vector<double> values) {
    for (double v : values) {
      int64_t w;
      std::memcpy(&w, &v, 8);
      desc.push_back(w);
    }
    desc[1] = values.size();
  }
  float *f32(int i) {
    return reinterpret_cast<float *>(host.data() + operands[i].first);
  }
  uint8_t *u8(int i) { return host.data() + operands[i].first; }
  int32_t run(int32_t (*entry)(infir2rt_context *, const int64_t *,
                               const char *)) {
    infir2rt_context ctx{};
    ctx.regions[0] = ctx.regions[1] = host.data();
    return entry(&ctx, desc.data(), "test");
  }
};

} // namespace infir2::test

#endif // INFIR2_TEST_UNIT_RUNTIME_DESCRIPTORBUILDER_H
