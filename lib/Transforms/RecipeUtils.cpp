//===- RecipeUtils.cpp - Queries shared by the FP8 recipe passes ----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "RecipeUtils.h"

#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"

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
