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
  if (getTpShards() > int64_t(getGrads().size()))
    return emitOpError() << "tp_shards (" << getTpShards()
                         << ") counts more gradients than it has ("
                         << getGrads().size() << ")";
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

/// Checks AdamW's betas.
static LogicalResult verifyBetas(Operation *op, double beta1, double beta2) {
  for (auto [name, beta] : {std::pair<StringRef, double>{"beta1", beta1},
                            {"beta2", beta2}})
    if (!(beta >= 0.0 && beta < 1.0))
      return op->emitOpError()
             << "expects " << name << " in [0, 1), got " << beta;
  return success();
}

/// Checks that AdamW's moments `moment` have the shape of the parameter.
static LogicalResult verifyMomentShape(Operation *op, Type param, Type moment) {
  if (cast<ShapedType>(moment).getShape() != cast<ShapedType>(param).getShape())
    return op->emitOpError() << "expects moments of the parameter's shape ("
                             << param << "), got " << moment;
  return success();
}

LogicalResult AdamWOp::verify() {
  if (failed(verifyBetas(*this, getBeta1().convertToDouble(),
                         getBeta2().convertToDouble())) ||
      failed(verifyMomentShape(*this, getParam().getType(),
                               getMoment1().getType())))
    return failure();
  return verifyUpdate(*this, getWeightDecay().convertToDouble(),
                      getMaxGradNorm().convertToDouble());
}

LogicalResult AdamWGroupOp::verify() {
  if (failed(verifyBetas(*this, getBeta1().convertToDouble(),
                         getBeta2().convertToDouble())))
    return failure();
  size_t n = getParams().size();
  if (n == 0)
    return emitOpError() << "expects at least one parameter";
  if (getGrads().size() != n || getMoments1().size() != n ||
      getMoments2().size() != n || getNewParams().size() != n ||
      getNewMoments1().size() != n || getNewMoments2().size() != n)
    return emitOpError() << "expects as many gradients, moments and updated "
                            "tensors as parameters ("
                         << n << ")";
  for (ValueRange group : {ValueRange(getGrads()), ValueRange(getNewParams())})
    if (group.getTypes() != getParams().getTypes())
      return emitOpError() << "expects gradients and updated parameters of "
                              "the parameters' types";
  Type momentElement = getElementTypeOrSelf(getMoments1().front().getType());
  for (ValueRange group :
       {ValueRange(getMoments1()), ValueRange(getMoments2()),
        ValueRange(getNewMoments1()), ValueRange(getNewMoments2())})
    for (auto [param, moment] : llvm::zip_equal(getParams(), group)) {
      if (failed(verifyMomentShape(*this, param.getType(), moment.getType())))
        return failure();
      if (getElementTypeOrSelf(moment.getType()) != momentElement)
        return emitOpError() << "expects every moment in one element type ("
                             << momentElement << "), got " << moment.getType();
    }
  if (getWeightDecays().size() != n)
    return emitOpError() << "expects one weight decay per parameter (" << n
                         << "), got " << getWeightDecays().size();
  for (double wd : getWeightDecays())
    if (failed(verifyUpdate(*this, wd, getMaxGradNorm().convertToDouble())))
      return failure();
  ArrayRef<int64_t> working = getWorking();
  if (working.size() != getWorkingCopies().size())
    return emitOpError() << "expects one working copy per index of 'working' ("
                         << working.size() << "), got "
                         << getWorkingCopies().size();
  for (auto [k, i] : llvm::enumerate(working)) {
    if (i < 0 || i >= int64_t(n) || (k > 0 && i <= working[k - 1]))
      return emitOpError() << "expects 'working' to be strictly increasing "
                              "parameter indices below "
                           << n;
    auto w = cast<RankedTensorType>(getWorkingCopies()[k].getType());
    auto p = cast<RankedTensorType>(getParams()[i].getType());
    if (w.getShape() != p.getShape())
      return emitOpError() << "expects working copy #" << k << " of parameter #"
                           << i << "'s shape, got " << w;
  }
  return success();
}

LogicalResult SGDOp::verify() {
  return verifyUpdate(*this, getWeightDecay().convertToDouble(),
                      getMaxGradNorm().convertToDouble());
}
