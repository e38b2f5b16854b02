//===- VerifyPrecision.cpp - Check the numerics contract statically -------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "RecipeUtils.h"

#include "infir2/Dialect/FP8/IR/FP8Attrs.h"
#include "infir2/Dialect/FP8/IR/FP8Dialect.h"
#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace infir2 {
#define GEN_PASS_DEF_VERIFYPRECISIONPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

struct VerifyPrecisionPass
    : public infir2::impl::VerifyPrecisionPassBase<VerifyPrecisionPass> {
  using Base::Base;

  void runOnOperation() override;
  LogicalResult checkGemm(GemmOpInterface gemm,
                          const llvm::StringSet<> &lmHead);
  LogicalResult checkUpdate(Operation *op, Value master);
  LogicalResult checkScaleRule(Operation *quantization);
  std::optional<fp8::ScaleRule> required;
};

void VerifyPrecisionPass::runOnOperation() {
  if (scales == RequiredScales::pow2)
    required = fp8::ScaleRule::pow2;
  else if (scales == RequiredScales::fp32)
    required = fp8::ScaleRule::fp32;
  else if (scales == RequiredScales::floor)
    required = fp8::ScaleRule::floor;
  bool ok = true;
  getOperation().walk([&](FunctionOpInterface fn) {
    llvm::StringSet<> lmHead = recipe::lmHeadWeights(fn);
    fn.walk([&](Operation *op) {
      LogicalResult r = success();
      if (auto gemm = dyn_cast<GemmOpInterface>(op))
        r = checkGemm(gemm, lmHead);
      else if (isa<fp8::QuantizeOp, fp8::QuantizeDualOp>(op))
        r = checkScaleRule(op);
      else if (auto adamw = dyn_cast<AdamWOp>(op))
        r = checkUpdate(op, adamw.getParam());
      else if (auto sgd = dyn_cast<SGDOp>(op))
        r = checkUpdate(op, sgd.getParam());
      ok &= succeeded(r);
    });
  });
  if (!ok)
    signalPassFailure();
}

LogicalResult VerifyPrecisionPass::checkGemm(GemmOpInterface gemm,
                                             const llvm::StringSet<> &lmHead) {
  auto d = gemm->getAttrOfType<fp8::DecisionAttr>(
      fp8::FP8Dialect::getDecisionAttrName());
  if (!d || d.getPrecision() != fp8::Precision::fp8)
    return success();
  if (!gemm.isSupportedGemm())
    return gemm->emitOpError()
           << "is decided fp8, but is not a GEMM form the recipe handles "
              "(operand layout or buffers)";
  if (recipe::isLMHead(gemm, lmHead))
    return gemm->emitOpError()
           << "is part of the LM head, which the numerics contract keeps in "
              "high precision, but is decided fp8";
  if (required && d.getScales() != *required)
    return gemm->emitOpError()
           << "is decided with " << fp8::stringifyScaleRule(*d.getScales())
           << " scales, but " << fp8::stringifyScaleRule(*required)
         << " was asked for";
  for (auto [name, operand, granularity] :
       {std::tuple<StringRef, Value, fp8::GranularityAttrInterface>{
            "lhs", gemm.getGemmLhs(), d.getLhs()},
        {"rhs", gemm.getGemmRhs(), d.getRhs()}}) {
    auto type = cast<RankedTensorType>(operand.getType());
    if (failed(fp8::getScaleShape(granularity, type.getShape(), [&] {
          return gemm->emitOpError() << "decided fp8, but its " << name
                                     << " granularity does not fit: ";
        })))
      return failure();
  }
  return success();
}

LogicalResult VerifyPrecisionPass::checkScaleRule(Operation *quantization) {
  auto rule = quantization->getAttrOfType<fp8::ScaleRuleAttr>("scale_rule");
  if (!required || rule.getValue() == *required)
    return success();
  return quantization->emitOpError()
         << "uses " << fp8::stringifyScaleRule(rule.getValue())
         << " scales, but " << fp8::stringifyScaleRule(*required)
         << " was asked for";
}

LogicalResult VerifyPrecisionPass::checkUpdate(Operation *op, Value master) {
  auto arg = dyn_cast<BlockArgument>(master);
  auto fn = arg ? dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp())
                : FunctionOpInterface();
  if (fn &&
      fn.getArgAttr(arg.getArgNumber(), Infir2Dialect::getMasterOfAttrName()))
    return success();
  return op->emitOpError() << "must update an FP32 master weight (an argument "
                              "carrying '"
                           << Infir2Dialect::getMasterOfAttrName() << "')";
}

} // namespace
