//===- Optimizer.cpp - Build the optimizer step ---------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cstdio>

namespace infir2 {
#define GEN_PASS_DEF_OPTIMIZERPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

struct OptimizerPass : public infir2::impl::OptimizerPassBase<OptimizerPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(build(getOperation())))
      signalPassFailure();
  }

  LogicalResult build(ModuleOp module);
};

/// `x` as printf's %g writes it ("0.999").
std::string shortest(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

LogicalResult OptimizerPass::build(ModuleOp module) {
  bool adamw = optimizer == OptimizerKind::adamw;
  if (std::optional<std::string> bad =
          checkOptimizerSettings(beta1, beta2, eps, weightDecay, gradClip))
    return module.emitError() << *bad;
  if (!adamw && optimizerState != OptimizerState::fp32)
    return module.emitError() << "optimizer-state=bf16 needs AdamW: SGD "
                                 "keeps no moments";
  // A BF16 moment m' = beta m + ... moves by (1 - beta) m; at or below half
  // an ulp (2^-8 of m at the top of a binade) it rounds back to m, and the
  // moment stops decaying (at beta2 = 0.999, v would never fall).
  if (adamw && optimizerState == OptimizerState::bf16)
    for (auto [name, beta] :
         {std::pair<StringRef, double>{"beta1", beta1}, {"beta2", beta2}})
      if (1.0 - beta <= 0x1p-8)
        return module.emitError()
               << "optimizer-state=bf16 needs 1 - " << name << " above 2^-8 ("
               << name << " below 0.99609375), got " << name << " = "
               << shortest(beta)
               << ": a BF16 moment would round back to itself instead of "
                  "decaying; keep optimizer-state=fp32 for it";
  auto forward = module.lookupSymbol<func::FuncOp>(forwardName);
  if (!forward)
    return module.emitError() << "no function named '" << forwardName
                              << "' whose parameters to optimize";
  if (module.lookupSymbol(stepName) && skipIfPresent)
    return success();
  if (module.lookupSymbol(stepName))
    return module.emitError() << "cannot create '" << stepName
                              << "': a symbol of that name already exists";
  SmallVector<std::pair<unsigned, ParamAttr>> params = getParams(forward);
  if (params.empty())
    return forward.emitError() << "has no trainable parameters (no argument "
                                  "carries 'infir2.param')";

  OpBuilder b(module.getContext());
  Type f32 = b.getF32Type();
  auto scalar = RankedTensorType::get({}, f32);
  SmallVector<Type> argTypes, resultTypes;
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;
  auto tagged = [&](StringRef attrName, StringRef value) {
    return b.getDictionaryAttr(
        b.getNamedAttr(attrName, b.getStringAttr(value)));
  };
  Type momentElement =
      optimizerState == OptimizerState::bf16 ? b.getBF16Type() : f32;
  // One group of tensors per kind of state, each in parameter order, of
  // element type `element` (null: the parameter's own, the working copy).
  auto addGroup = [&](SmallVectorImpl<Type> &types,
                      SmallVectorImpl<DictionaryAttr> &attrs,
                      StringRef attrName, Type element) {
    for (auto [index, param] : params) {
      auto type = cast<RankedTensorType>(forward.getArgumentTypes()[index]);
      types.push_back(element ? type.clone(element) : type);
      attrs.push_back(tagged(attrName, param.getName()));
    }
  };
  addGroup(argTypes, argAttrs, Infir2Dialect::getMasterOfAttrName(), f32);
  addGroup(argTypes, argAttrs, Infir2Dialect::getGradOfAttrName(), f32);
  if (adamw) {
    addGroup(argTypes, argAttrs, Infir2Dialect::getMoment1OfAttrName(),
             momentElement);
    addGroup(argTypes, argAttrs, Infir2Dialect::getMoment2OfAttrName(),
             momentElement);
  }
  SmallVector<StringRef> scalars{"learning_rate"};
  if (adamw)
    scalars.push_back("step");
  scalars.push_back("grad_scale");
  for (StringRef role : scalars) {
    argTypes.push_back(scalar);
    argAttrs.push_back(tagged(Infir2Dialect::getInputAttrName(), role));
  }
  addGroup(resultTypes, resultAttrs, Infir2Dialect::getMasterOfAttrName(), f32);
  if (adamw) {
    addGroup(resultTypes, resultAttrs, Infir2Dialect::getMoment1OfAttrName(),
             momentElement);
    addGroup(resultTypes, resultAttrs, Infir2Dialect::getMoment2OfAttrName(),
             momentElement);
  }
  addGroup(resultTypes, resultAttrs, Infir2Dialect::getWorkingCopyOfAttrName(),
           Type());
  resultTypes.push_back(scalar);
  resultAttrs.push_back(b.getDictionaryAttr({}));

  b.setInsertionPointToEnd(module.getBody());
  Location loc = forward.getLoc();
  auto step = func::FuncOp::create(b, loc, stepName,
                                   b.getFunctionType(argTypes, resultTypes));
  step.setAllArgAttrs(argAttrs);
  step.setAllResultAttrs(resultAttrs);
  Block *body = step.addEntryBlock();
  b.setInsertionPointToStart(body);

  size_t n = params.size();
  auto group = [&](unsigned g) { return body->getArguments().slice(g * n, n); };
  ValueRange masters = group(0), grads = group(1);
  unsigned s = (adamw ? 4 : 2) * n;
  Value lr = body->getArgument(s);
  Value stepIndex = adamw ? body->getArgument(s + 1) : Value();
  Value gradScale = body->getArgument(s + (adamw ? 2 : 1));

  // A tensor-parallel rank's shards first: their squares are summed over
  // the group, the whole parameters' counted once.
  SmallVector<Value> normOf;
  for (bool sharded : {true, false})
    for (auto [i, entry] : llvm::enumerate(params))
      if (sharded == bool(forward.getArgAttr(
                         entry.first, Infir2Dialect::getTPShardAttrName())))
        normOf.push_back(grads[i]);
  int64_t shards = llvm::count_if(params, [&](auto &entry) {
    return bool(
        forward.getArgAttr(entry.first, Infir2Dialect::getTPShardAttrName()));
  });
  auto globalNorm = GlobalNormOp::create(b, loc, normOf, gradScale);
  globalNorm.setTpShards(shards);
  Value norm = globalNorm;
  SmallVector<Value> newMasters, newM1, newM2, working;
  for (auto [i, entry] : llvm::enumerate(params)) {
    auto [index, param] = entry;
    auto type = cast<RankedTensorType>(forward.getArgumentTypes()[index]);
    Location ploc = forward.getArgument(index).getLoc();
    double decay =
        (type.getRank() >= 2 || decay1D) ? weightDecay.getValue() : 0.0;
    Value updated;
    if (adamw) {
      auto op = AdamWOp::create(
          b, ploc, masters[i], grads[i], group(2)[i], group(3)[i], lr,
          stepIndex, gradScale, norm, b.getF64FloatAttr(beta1),
          b.getF64FloatAttr(beta2), b.getF64FloatAttr(eps),
          b.getF64FloatAttr(decay), b.getF64FloatAttr(gradClip));
      updated = op.getNewParam();
      newM1.push_back(op.getNewMoment1());
      newM2.push_back(op.getNewMoment2());
    } else {
      updated = SGDOp::create(b, ploc, masters[i], grads[i], lr, gradScale,
                              norm, b.getF64FloatAttr(decay),
                              b.getF64FloatAttr(gradClip));
    }
    newMasters.push_back(updated);
    working.push_back(type.getElementType().isF32()
                          ? updated
                          : ConvertOp::create(b, ploc, type, updated));
  }
  SmallVector<Value> results(newMasters);
  llvm::append_range(results, newM1);
  llvm::append_range(results, newM2);
  llvm::append_range(results, working);
  results.push_back(norm);
  func::ReturnOp::create(b, loc, results);
  return success();
}

} // namespace
