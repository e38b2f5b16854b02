//===- Infir2Gradients.cpp - Reverse-mode gradient rules of infir2 ops ----===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Each rule receives dL/dresult and builds dL/doperand, in the operand's
// type. Every rule is checked against central finite differences through the
// FP64 reference interpreter (test/Transforms/autodiff-gradcheck.mlir).
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace infir2;

namespace {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// `v` in `type`'s element type (a no-op when it already is).
Value convertTo(OpBuilder &b, Location loc, Value v, Type elementType) {
  RankedTensorType t = tensorType(v);
  if (t.getElementType() == elementType)
    return v;
  return ConvertOp::create(b, loc, t.clone(elementType), v);
}

/// Sums `v` over leading dimensions down to `type` (a suffix of its shape).
Value reduceTo(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  return ReduceSumOp::create(b, loc, type, v);
}

/// A matmul whose result type follows from its operands; null (with a
/// diagnostic) when the operands do not fit.
Value matmul(OpBuilder &b, Location loc, Value lhs, Value rhs, bool tl,
             bool tr) {
  FailureOr<SmallVector<int64_t>> shape =
      inferMatmulShape(tensorType(lhs).getShape(), tensorType(rhs).getShape(),
                       tl, tr, [&] { return emitError(loc); });
  if (failed(shape))
    return nullptr;
  auto type = RankedTensorType::get(*shape, tensorType(lhs).getElementType());
  return MatmulOp::create(b, loc, type, lhs, rhs, tl, tr, /*acc=*/Value());
}

Value reshape(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  auto type = tensorType(v).clone(shape);
  if (type == v.getType())
    return v;
  return ReshapeOp::create(b, loc, type, v);
}

/// The parameter declaration of `v`, if it is a parameter argument.
ParamAttr paramOf(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || !arg.getOwner()->isEntryBlock())
    return {};
  auto fn = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
  if (!fn)
    return {};
  return fn.getArgAttrOfType<ParamAttr>(arg.getArgNumber(),
                                        Infir2Dialect::getParamAttrName());
}

/// Tags a gradient GEMM for the FP8 recipe with its role in the training step
/// ("wgrad" computes a parameter's gradient and contracts over tokens, "dgrad"
/// an activation's), the weight it belongs to, and which operand carries the
/// incoming gradient (E5M2 under the hybrid format).
void tagGradientGemm(Value gemm, StringRef role, ParamAttr weight,
                     unsigned gradOperand) {
  Operation *op = gemm.getDefiningOp();
  Builder b(op->getContext());
  op->setAttr(Infir2Dialect::getGemmRoleAttrName(), b.getStringAttr(role));
  op->setAttr(Infir2Dialect::getGemmGradOperandAttrName(),
              b.getI64IntegerAttr(gradOperand));
  if (weight)
    op->setAttr(Infir2Dialect::getGemmWeightAttrName(),
                b.getStringAttr(weight.getName()));
}

} // namespace

LogicalResult EmbeddingOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(EmbeddingGradOp::create(
      b, getLoc(), getTable().getType(), getIds(), resultGrads[0],
      /*acc=*/Value(), getVocabShardsAttr()));
  operandGrads.push_back(nullptr);
  return success();
}

// C = op(A) · op(B), op = transpose when the flag is set:
//   d op(A) = dC · op(B)ᵀ,   d op(B) = op(A)ᵀ · dC.
LogicalResult MatmulOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value a = getLhs(), bm = getRhs();
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  // An FP32-output GEMM of narrower operands (the LM head): bring the
  // gradient to the operands' type.
  ArrayRef<int64_t> aShape = tensorType(a).getShape();
  bool sharedRhs = tensorType(bm).getRank() == 2 && aShape.size() > 2;
  if (sharedRhs && ta)
    return emitOpError() << "has no gradient rule for a batched 'lhs' with "
                            "transpose_lhs and a shared rank-2 'rhs'";
  Value dc = convertTo(b, loc, resultGrads[0], tensorType(a).getElementType());

  Value da = ta ? matmul(b, loc, bm, dc, /*tl=*/tb, /*tr=*/true)
                : matmul(b, loc, dc, bm, /*tl=*/false, /*tr=*/!tb);

  Value aFlat = a, dcFlat = dc;
  if (sharedRhs) {
    // The weight is shared by every batch element: its gradient sums over
    // them, which folding the batch into M does.
    int64_t rows = 1;
    for (int64_t d : aShape.drop_back())
      rows *= d;
    aFlat = reshape(b, loc, a, {rows, aShape.back()});
    dcFlat = reshape(b, loc, dc, {rows, tensorType(dc).getShape().back()});
  }
  Value db = tb ? matmul(b, loc, dcFlat, aFlat, /*tl=*/true, /*tr=*/ta)
                : matmul(b, loc, aFlat, dcFlat, /*tl=*/!ta, /*tr=*/false);
  if (!da || !db)
    return failure();
  // The weight is the parameter operand (the rhs of a linear layer x·Wᵀ).
  ParamAttr lhsParam = paramOf(a), rhsParam = paramOf(bm);
  bool lhsIsWeight = lhsParam && !rhsParam;
  ParamAttr weight = lhsIsWeight ? lhsParam : rhsParam;
  tagGradientGemm(da, lhsIsWeight ? "wgrad" : "dgrad", weight,
                  /*gradOperand=*/ta ? 1 : 0);
  tagGradientGemm(db, lhsIsWeight ? "dgrad" : (rhsParam ? "wgrad" : "dgrad"),
                  weight, /*gradOperand=*/tb ? 0 : 1);
  operandGrads.push_back(da);
  operandGrads.push_back(db);
  if (getAcc()) // result = acc + lhs·rhs: the accumulator's gradient passes
    operandGrads.push_back(resultGrads[0]);
  return success();
}

LogicalResult RMSNormOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  auto grad = RMSNormGradOp::create(b, getLoc(), getInput(), getWeight(),
                                    resultGrads[0], getEpsilonAttr(),
                                    /*residual=*/Value(), /*acc=*/Value());
  operandGrads.push_back(grad.getInputGrad());
  operandGrads.push_back(grad.getWeightGrad());
  return success();
}

LogicalResult RopeOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(RopeGradOp::create(b, getLoc(), resultGrads[0],
                                            getPositions(), getHeadDimAttr(),
                                            getThetaAttr()));
  operandGrads.push_back(nullptr);
  return success();
}

LogicalResult AttentionOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  auto grad = AttentionGradOp::create(
      b, getLoc(), getQuery(), getKey(), getValue(), resultGrads[0],
      getSegments(), getNumHeadsAttr(), getNumKvHeadsAttr(), getHeadDimAttr(),
      getScaleAttr(), getCausalAttr());
  operandGrads.append(
      {grad.getQueryGrad(), grad.getKeyGrad(), grad.getValueGrad()});
  if (getSegments())
    operandGrads.push_back(nullptr); // segment ids are not differentiable
  return success();
}

LogicalResult SiluOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      SiluGradOp::create(b, getLoc(), getInput(), resultGrads[0]));
  return success();
}

LogicalResult SwigluOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  auto grad =
      SwigluGradOp::create(b, getLoc(), getGate(), getUp(), resultGrads[0]);
  operandGrads.push_back(grad.getGateGrad());
  operandGrads.push_back(grad.getUpGrad());
  return success();
}

LogicalResult AddOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(resultGrads[0]);
  operandGrads.push_back(
      reduceTo(b, getLoc(), resultGrads[0], getRhs().getType()));
  return success();
}

LogicalResult MulOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  operandGrads.push_back(MulOp::create(b, loc, resultGrads[0], getRhs()));
  Value prod = MulOp::create(b, loc, resultGrads[0], getLhs());
  operandGrads.push_back(reduceTo(b, loc, prod, getRhs().getType()));
  return success();
}

LogicalResult
CrossEntropyOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(CrossEntropyGradOp::create(
      b, getLoc(), getLogits().getType(), getLogits(), getTargets(),
      getLossMask(), resultGrads[0], getDivisor(), getIgnoreIndexAttr(),
      getVocabShardsAttr()));
  // The targets, the mask and the divisor: not differentiated.
  operandGrads.append(getNumOperands() - 1, nullptr);
  return success();
}

LogicalResult ReshapeOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      reshape(b, getLoc(), resultGrads[0], tensorType(getInput()).getShape()));
  return success();
}

LogicalResult TransposeOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  operandGrads.push_back(TransposeOp::create(b, getLoc(), getInput().getType(),
                                             resultGrads[0], inverse));
  return success();
}

LogicalResult ConvertOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(convertTo(b, getLoc(), resultGrads[0],
                                   tensorType(getInput()).getElementType()));
  return success();
}

LogicalResult ReduceSumOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  // Broadcast the gradient back over the summed dimensions: zeros + dy,
  // dy in the input's element type (an accumulator makes the result f32).
  RankedTensorType inType = tensorType(getInput());
  Value dy = resultGrads[0];
  if (auto dyType = tensorType(dy);
      dyType.getElementType() != inType.getElementType())
    dy = ConvertOp::create(b, getLoc(), dyType.clone(inType.getElementType()),
                           dy);
  Value zeros = arith::ConstantOp::create(
      b, getLoc(), inType,
      DenseElementsAttr::get(inType,
                             b.getFloatAttr(inType.getElementType(), 0.0)));
  operandGrads.push_back(AddOp::create(b, getLoc(), zeros, dy));
  if (getAcc()) // result = acc + Σ: the accumulator's gradient passes
    operandGrads.push_back(resultGrads[0]);
  return success();
}

// Megatron's f and g: each is the other's gradient.
LogicalResult TPCopyOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(TPReduceOp::create(
      b, getLoc(), resultGrads[0].getType(), resultGrads[0], getSizeAttr()));
  return success();
}

LogicalResult TPReduceOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(resultGrads[0]);
  return success();
}

LogicalResult
TPAllGatherOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      TPReduceScatterOp::create(b, getLoc(), getInput().getType(),
                                resultGrads[0], getSizeAttr(), getDimAttr()));
  return success();
}

LogicalResult
TPReduceScatterOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      TPAllGatherOp::create(b, getLoc(), getInput().getType(), resultGrads[0],
                            getSizeAttr(), getDimAttr()));
  return success();
}
