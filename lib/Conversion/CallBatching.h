//===- CallBatching.h - Consecutive runtime calls as one --------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_LIB_CONVERSION_CALLBATCHING_H
#define INFIR2_LIB_CONVERSION_CALLBATCHING_H

#include "infir2/Dialect/Runtime/IR/RuntimeAttrs.h"

#include "mlir/IR/Location.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace infir2 {

/// One runtime call of a lowered step, before it is an infir2rt.call.
struct LoweredCall {
  std::string entry;
  llvm::SmallVector<rtir::BufferAttr> buffers;
  llvm::SmallVector<double> attrs;
  mlir::Location loc;
  std::string where;
};

/// Merges each run of consecutive calls that the runtime runs as one call
/// (ABI.def says which: their operands repeat in groups):
/// - `quantize_dual` with the same attributes, where no call's input
///   overlaps another's outputs (the groups may run in any order): the
///   optimizer step's cache refresh and `@quantize_weights` become one call;
/// - `rope` with the same attributes, where no call reads what an earlier
///   one writes (the runtime runs the groups in order): a layer's q and k
///   (and their gradients) rotate in one call;
/// - `reduce_sum` with the same attributes (all with an accumulator or none),
///   where no call's input or accumulator overlaps another's result: a
///   layer's q, k and v bias gradients become one call;
/// - `all_reduce` whose every sum is in place (the planner gave each result
///   its operand's slot): the buckets the data-parallel pass made become
///   one call, which reduces each contiguous run of slots where it lies.
/// A merged call keeps the first call's location; its `where` says how
/// many ops it stands for.
void batchCalls(std::vector<LoweredCall> &calls);

} // namespace infir2

#endif // INFIR2_LIB_CONVERSION_CALLBATCHING_H
