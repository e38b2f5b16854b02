//===- Infir2GradientOps.cpp - Verifiers of infir2 *_grad ops ---*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The verifiers of the gradient ops (Infir2GradientOps.td). Most check what
// the forward op checks, through the functions of Infir2OpVerifiers.h.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "Infir2OpVerifiers.h"

using namespace mlir;
using namespace infir2;
using namespace infir2::detail;

//===----------------------------------------------------------------------===//
// RMSNormGradOp, RopeGradOp
//===----------------------------------------------------------------------===//

LogicalResult RMSNormGradOp::verify() {
  if (failed(verifyRMSNorm(*this, getInput(), getWeight())))
    return failure();
  if (Value residual = getResidual();
      residual &&
      failed(checkSameType(*this, "residual", residual, "input", getInput())))
    return failure();
  if (Value acc = getAcc()) {
    if (failed(checkShape(*this, "acc", acc, shapeOf(getWeight()),
                          "the weight's shape")))
      return failure();
    return verifyAccumulator(*this, acc, getWeightGrad());
  }
  return checkSameType(*this, "weight_grad", getWeightGrad(), "weight",
                       getWeight());
}

LogicalResult RMSNormGradOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> location, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &types) {
  // The weight's gradient has the accumulator's type when there is one.
  Adaptor adaptor(operands, attributes, properties, regions);
  if (operands.size() < 3)
    return failure();
  types.push_back(adaptor.getInput().getType());
  types.push_back(adaptor.getAcc() ? adaptor.getAcc().getType()
                                   : adaptor.getWeight().getType());
  return success();
}

OpResult RMSNormGradOp::getAccumulatedResult() {
  return cast<OpResult>(getWeightGrad());
}

Operation *RMSNormGradOp::cloneWithAccumulator(OpBuilder &builder, Value acc) {
  return RMSNormGradOp::create(builder, getLoc(), getInput(), getWeight(),
                               getResultGrad(), getEpsilonAttr(), getResidual(),
                               acc);
}

LogicalResult RopeGradOp::verify() {
  return verifyRope(*this, getResultGrad(), "result_grad", getPositions(),
                    getHeadDim());
}

//===----------------------------------------------------------------------===//
// AttentionGradOp
//===----------------------------------------------------------------------===//

double AttentionGradOp::getEffectiveScale() {
  return effectiveScale(getScale(), getHeadDim());
}

LogicalResult AttentionGradOp::verify() {
  return verifyAttention(*this, getQuery(), getKey(), getValue(),
                         getSegments(), getNumHeads(), getNumKvHeads(),
                         getHeadDim(), getCausal());
}

//===----------------------------------------------------------------------===//
// CrossEntropyGradOp
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyGradOp::verify() {
  if (failed(
          verifyCrossEntropy(*this, getLogits(), getTargets(), getLossMask())))
    return failure();
  Type logits = cast<ShapedType>(getLogits().getType()).getElementType(),
       grad = cast<ShapedType>(getLogitsGrad().getType()).getElementType();
  if (grad != logits && !(isa<Float32Type>(logits) && isa<BFloat16Type>(grad)))
    return emitOpError() << "expects 'logits_grad' of the logits' element "
                            "type, or bf16 for f32 logits, got "
                         << grad << " for " << logits << " logits";
  return success();
}

//===----------------------------------------------------------------------===//
// EmbeddingGradOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingGradOp::verify() {
  ArrayRef<int64_t> table = shapeOf(getTableGrad());
  if (table.size() != 2)
    return emitOpError() << "expects a table-shaped result of rank 2 ([vocab, "
                            "dim]), got shape ["
                         << table << "]";
  SmallVector<int64_t> expected(shapeOf(getIds()));
  expected.push_back(table[1]);
  if (failed(checkShape(*this, "result_grad", getResultGrad(), expected,
                        "the ids' shape followed by the table's row size")))
    return failure();
  if (getAcc())
    return verifyAccumulator(*this, getAcc(), getTableGrad());
  return checkSameElementType(*this, "table_grad", getTableGrad(),
                              "result_grad", getResultGrad());
}
