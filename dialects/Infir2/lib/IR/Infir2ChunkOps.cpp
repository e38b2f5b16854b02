//===- Infir2ChunkOps.cpp - Verifiers of the chunking ops -------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The verifiers of the ops a step computed in chunks is built from
// (Infir2ChunkOps.td): slice, concat and loss_weight.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "Infir2OpVerifiers.h"

using namespace mlir;
using namespace infir2;
using namespace infir2::detail;

/// Checks that `v` has `ref`'s element type and its shape but for the
/// leading dimension, which both must have.
static LogicalResult checkRowsOf(Operation *op, StringRef name, Value v,
                                 StringRef refName, Value ref) {
  if (rankOf(v) == 0 || rankOf(ref) == 0)
    return op->emitOpError() << "expects tensors of rank at least 1 (rows "
                                "along the leading dimension)";
  SmallVector<int64_t> expected(shapeOf(ref));
  expected[0] = shapeOf(v)[0];
  if (failed(checkShape(
          op, name, v, expected,
          ("the shape of '" + refName + "' but for the leading dimension")
              .str())))
    return failure();
  return checkSameElementType(op, name, v, refName, ref);
}

LogicalResult SliceOp::verify() {
  if (failed(checkRowsOf(*this, "result", getResult(), "input", getInput())))
    return failure();
  int64_t rows = shapeOf(getInput())[0], n = shapeOf(getResult())[0];
  if (n > rows || getStart() > rows - n)
    return emitOpError() << "expects rows [" << getStart() << ", "
                         << getStart() + n << ") inside the input's " << rows
                         << " rows";
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "expects at least one input";
  int64_t rows = 0;
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    if (failed(checkRowsOf(*this, ("input #" + Twine(i)).str(), v, "result",
                           getResult())))
      return failure();
    rows += shapeOf(v)[0];
  }
  if (rows != shapeOf(getResult())[0])
    return emitOpError() << "expects a result of " << rows
                         << " rows (the inputs' sum), got "
                         << shapeOf(getResult())[0];
  return success();
}

LogicalResult LossWeightOp::verify() {
  if (getLossMask() &&
      failed(checkShape(*this, "loss_mask", getLossMask(),
                        shapeOf(getTargets()), "the shape of 'targets'")))
    return failure();
  return success();
}
