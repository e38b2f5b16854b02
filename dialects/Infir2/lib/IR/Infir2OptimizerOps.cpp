//===- Infir2OptimizerOps.cpp - Verifiers of optimizer ops ------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The verifiers and type inference of the optimizer-step ops
// (Infir2OptimizerOps.td): global_norm, the collectives and the updates.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace infir2;

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

LogicalResult GlobalNormOp::verify() {
  if (getGrads().empty())
    return emitOpError() << "expects at least one gradient";
  return success();
}

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>,
                                            ValueRange operands, DictionaryAttr,
                                            OpaqueProperties, RegionRange,
                                            SmallVectorImpl<Type> &inferred) {
  llvm::append_range(inferred, operands.getTypes());
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "expects at least one tensor to reduce";
  if (getInputs().getTypes() != getResults().getTypes())
    return emitOpError() << "expects results of the operands' types";
  return success();
}

/// Checks that each `shard` is rank `world`'s row shard of the `full` tensor
/// at the same position: the rows ceil(d0 / world), the rest equal.
static LogicalResult verifyRowShards(Operation *op, TypeRange full,
                                     TypeRange shards, int64_t world) {
  if (full.empty())
    return op->emitOpError() << "expects at least one tensor";
  if (full.size() != shards.size())
    return op->emitOpError() << "expects one result per operand, got "
                             << shards.size() << " for " << full.size();
  for (auto [i, types] : llvm::enumerate(llvm::zip_equal(full, shards))) {
    auto f = cast<RankedTensorType>(std::get<0>(types));
    auto s = cast<RankedTensorType>(std::get<1>(types));
    if (f.getElementType() != s.getElementType())
      return op->emitOpError()
             << "tensor #" << i << ": element types differ ("
             << f.getElementType() << " and " << s.getElementType() << ")";
    if (f.getRank() == 0)
      return op->emitOpError()
             << "tensor #" << i << " is a scalar; shards are rows of a tensor";
    SmallVector<int64_t> want(f.getShape());
    want[0] = llvm::divideCeil(want[0], world);
    if (s.getRank() != f.getRank() || s.getShape() != ArrayRef(want))
      return op->emitOpError()
             << "tensor #" << i << ": the shard of " << f << " over " << world
             << " ranks is " << f.clone(want) << ", got " << s;
  }
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  return verifyRowShards(*this, getInputs().getTypes(), getResults().getTypes(),
                         getWorldSize());
}

LogicalResult AllGatherOp::verify() {
  return verifyRowShards(*this, getResults().getTypes(), getInputs().getTypes(),
                         getWorldSize());
}

/// Checks the hyperparameters shared by the update ops.
static LogicalResult verifyUpdate(Operation *op, double weightDecay,
                                  double maxGradNorm) {
  if (weightDecay < 0.0)
    return op->emitOpError()
           << "expects a non-negative weight_decay, got " << weightDecay;
  if (maxGradNorm < 0.0)
    return op->emitOpError()
           << "expects a non-negative max_grad_norm (0 disables clipping), got "
           << maxGradNorm;
  return success();
}

LogicalResult AdamWOp::verify() {
  for (auto [name, beta] :
       {std::pair<StringRef, double>{"beta1", getBeta1().convertToDouble()},
        {"beta2", getBeta2().convertToDouble()}})
    if (!(beta >= 0.0 && beta < 1.0))
      return emitOpError() << "expects " << name << " in [0, 1), got " << beta;
  return verifyUpdate(*this, getWeightDecay().convertToDouble(),
                      getMaxGradNorm().convertToDouble());
}

LogicalResult SGDOp::verify() {
  return verifyUpdate(*this, getWeightDecay().convertToDouble(),
                      getMaxGradNorm().convertToDouble());
}
