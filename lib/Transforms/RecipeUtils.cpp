//===- RecipeUtils.cpp - Queries shared by the FP8 recipe passes ----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "RecipeUtils.h"

#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace infir2;

std::optional<StringRef> recipe::paramName(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || !arg.getOwner()->isEntryBlock())
    return std::nullopt;
  auto fn = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
  if (!fn)
    return std::nullopt;
  if (auto p = fn.getArgAttrOfType<ParamAttr>(
          arg.getArgNumber(), Infir2Dialect::getParamAttrName()))
    return p.getName();
  return std::nullopt;
}

bool recipe::feedsLogits(Value v) {
  for (Operation *user : v.getUsers()) {
    if (auto ce = dyn_cast<CrossEntropyOp>(user); ce && ce.getLogits() == v)
      return true;
    if (isa<ConvertOp, ReshapeOp>(user) && feedsLogits(user->getResult(0)))
      return true;
  }
  return false;
}

llvm::StringSet<> recipe::lmHeadWeights(FunctionOpInterface fn) {
  llvm::StringSet<> weights;
  fn.walk([&](GemmOpInterface gemm) {
    if (!gemm.isSupportedGemm() || !feedsLogits(gemm.getGemmResult()))
      return;
    for (Value v : {gemm.getGemmRhs(), gemm.getGemmLhs()})
      if (std::optional<StringRef> name = paramName(v))
        weights.insert(*name);
  });
  return weights;
}

bool recipe::isLMHead(GemmOpInterface gemm, const llvm::StringSet<> &lmHead) {
  if (gemm.isSupportedGemm() && feedsLogits(gemm.getGemmResult()))
    return true;
  auto role =
      gemm->getAttrOfType<StringAttr>(Infir2Dialect::getGemmRoleAttrName());
  auto weight =
      gemm->getAttrOfType<StringAttr>(Infir2Dialect::getGemmWeightAttrName());
  return role && weight && lmHead.contains(weight.getValue());
}

/// Whether a linalg init is known to be all zeros.
static bool isZeroFill(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  return fill && (matchPattern(fill.getInputs()[0], m_AnyZeroFloat()) ||
                  matchPattern(fill.getInputs()[0], m_Zero()));
}

fp8::ScaledMatmulOp
recipe::replaceWithScaledMatmul(GemmOpInterface gemm, Value lhs, Value lhsScale,
                                fp8::GranularityAttrInterface lhsGranularity,
                                Value rhs, Value rhsScale,
                                fp8::GranularityAttrInterface rhsGranularity) {
  Operation *op = gemm.getOperation();
  OpBuilder b(op);
  Value result = gemm.getGemmResult();
  // An infir2.matmul's accumulator stays the FP8 GEMM's.
  auto matmul = dyn_cast<MatmulOp>(op);
  auto mm = fp8::ScaledMatmulOp::create(
      b, op->getLoc(), result.getType(), lhs, lhsScale, lhsGranularity, rhs,
      rhsScale, rhsGranularity, matmul ? matmul.getAcc() : Value());
  for (NamedAttribute attr : op->getDiscardableAttrs())
    mm->setAttr(attr.getName(), attr.getValue());
  Value replacement = mm.getResult();
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    Value init = linalgOp.getDpsInits()[0];
    if (!isZeroFill(init))
      replacement = AddOp::create(b, op->getLoc(), replacement, init);
  }
  result.replaceAllUsesWith(replacement);
  op->erase();
  return mm;
}
