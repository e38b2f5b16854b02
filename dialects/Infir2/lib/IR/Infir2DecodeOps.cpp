//===- Infir2DecodeOps.cpp - Verifiers of decoding ops ----------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The verifiers of the decode-step ops (Infir2DecodeOps.td): cache_write and
// cache_attention. cache_attention checks its heads as attention does.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "Infir2OpVerifiers.h"

using namespace mlir;
using namespace infir2;
using namespace infir2::detail;

/// Checks that `positions` is [B, T] for the `[B, T, ...]` tensor `of`.
static LogicalResult checkPositions(Operation *op, Value positions, Value of,
                                    StringRef ofName) {
  return checkShape(op, "positions", positions, shapeOf(of).take_front(2),
                    ("the first two dimensions of '" + ofName + "'").str());
}

LogicalResult CacheWriteOp::verify() {
  for (auto [name, v] : {std::pair<StringRef, Value>{"cache", getCache()},
                         {"update", getUpdate()}})
    if (rankOf(v) != 3)
      return emitOpError() << "expects '" << name
                           << "' of rank 3 ([batch, seq, width]), got shape ["
                           << shapeOf(v) << "]";
  ArrayRef<int64_t> cache = shapeOf(getCache()), update = shapeOf(getUpdate());
  if (update[0] != cache[0] || update[2] != cache[2])
    return emitOpError() << "expects 'update' [" << update
                         << "] to have the batch and width of 'cache' ["
                         << cache << "]";
  if (update[1] > cache[1])
    return emitOpError() << "expects at most " << cache[1]
                         << " new rows (the cache's length), got "
                         << update[1];
  if (failed(checkSameElementType(*this, "update", getUpdate(), "cache",
                                  getCache())))
    return failure();
  return checkPositions(*this, getPositions(), getUpdate(), "update");
}

double CacheAttentionOp::getEffectiveScale() {
  return effectiveScale(getScale(), getHeadDim());
}

LogicalResult CacheAttentionOp::verify() {
  if (failed(verifyAttention(*this, getQuery(), getKeyCache(), getValueCache(),
                             /*segments=*/Value(), getNumHeads(),
                             getNumKvHeads(), getHeadDim(), /*causal=*/false)))
    return failure();
  if (failed(checkPositions(*this, getPositions(), getQuery(), "query")))
    return failure();
  return checkSameType(*this, "result", getResult(), "query", getQuery());
}
