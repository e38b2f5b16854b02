//===- CallBatching.cpp - Consecutive runtime calls as one ----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "CallBatching.h"

#include "infir2/Transforms/MemoryPlan.h"

#include "llvm/ADT/STLExtras.h"

#include <functional>

using namespace mlir;
using namespace infir2;

namespace {

/// Whether two buffers share a byte.
bool overlap(rtir::BufferAttr a, rtir::BufferAttr b) {
  if (a.getRegion() != b.getRegion())
    return false;
  int64_t aEnd = a.getOffset() + storedBytes(a.getType()),
          bEnd = b.getOffset() + storedBytes(b.getType());
  return a.getOffset() < bEnd && b.getOffset() < aEnd;
}

/// Groups of `size` operands, those at the positions `written` says are
/// written and the others read (quantize_dual: input, then data, scale,
/// data_t, scale_t; rope: input and positions, then out; reduce_sum: input,
/// out, then acc): none of `next`'s inputs may overlap `batch`'s outputs
/// (the runtime runs the groups in order), and unless `inOrder`, nor the
/// reverse, so that the groups may run in any order.
bool independentGroups(const LoweredCall &batch, const LoweredCall &next,
                       size_t size, llvm::function_ref<bool(size_t)> written,
                       bool inOrder) {
  auto crosses = [&](const LoweredCall &in, const LoweredCall &out) {
    for (size_t i = 0; i < in.buffers.size(); i += size)
      for (size_t r = 0; r < size; ++r)
        for (size_t o = 0; o < out.buffers.size(); o += size)
          for (size_t k = 0; k < size; ++k)
            if (!written(r) && written(k) &&
                overlap(in.buffers[i + r], out.buffers[o + k]))
              return true;
    return false;
  };
  return !crosses(next, batch) && (inOrder || !crosses(batch, next));
}

/// all_reduce's operands are the inputs, then the results: every result in
/// its input's buffer.
bool inPlace(const LoweredCall &c) {
  size_t n = c.buffers.size() / 2;
  for (size_t i = 0; i < n; ++i)
    if (c.buffers[i] != c.buffers[n + i])
      return false;
  return true;
}

/// Whether `next` can join `batch`, and then joins it.
bool absorb(LoweredCall &batch, const LoweredCall &next) {
  if (batch.entry != next.entry || batch.attrs != next.attrs)
    return false;
  // Entries whose operands repeat in groups (ABI.def's GROUPS_OF): the
  // group size, which of a group's operands are written, and whether the
  // runtime runs the groups in order (rope; a later group may then write
  // what an earlier one read, as a layer's two gradients' buffers do).
  size_t size = 0;
  std::function<bool(size_t)> written;
  if (batch.entry == "quantize_dual") {
    size = 5;
    written = [](size_t k) { return k >= 1; };
  } else if (batch.entry == "rope") {
    size = 3;
    written = [](size_t k) { return k >= 2; };
  } else if (batch.entry == "reduce_sum") {
    size = batch.attrs[0] != 0.0 ? 3 : 2; // (input, out[, acc])
    written = [](size_t k) { return k == 1; };
  }
  if (size && batch.buffers.size() % size == 0 && next.buffers.size() == size &&
      independentGroups(batch, next, size, written, batch.entry == "rope")) {
    batch.buffers.append(next.buffers);
    return true;
  }
  if (batch.entry == "all_reduce" && inPlace(batch) && inPlace(next)) {
    size_t n = batch.buffers.size() / 2, m = next.buffers.size() / 2;
    batch.buffers.insert(batch.buffers.begin() + n, next.buffers.begin(),
                         next.buffers.begin() + m);
    batch.buffers.append(next.buffers.begin() + m, next.buffers.end());
    return true;
  }
  return false;
}

} // namespace

void infir2::batchCalls(std::vector<LoweredCall> &calls) {
  std::vector<LoweredCall> out;
  int64_t merged = 0; // calls merged into out.back()
  auto finish = [&] {
    if (merged)
      out.back().where += " and " + std::to_string(merged) + " more like it";
    merged = 0;
  };
  for (LoweredCall &c : calls) {
    if (!out.empty() && absorb(out.back(), c)) {
      ++merged;
      continue;
    }
    finish();
    out.push_back(std::move(c));
  }
  finish();
  calls = std::move(out);
}
