//===- Autodiff.cpp - Reverse-mode automatic differentiation --------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

namespace infir2 {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

Value splat(OpBuilder &b, Location loc, Type type, double value) {
  auto tensor = cast<RankedTensorType>(type);
  return arith::ConstantOp::create(
      b, loc, tensor,
      DenseElementsAttr::get(tensor,
                             b.getFloatAttr(tensor.getElementType(), value)));
}

Value toF32(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getElementType().isF32())
    return v;
  return ConvertOp::create(b, loc, type.clone(b.getF32Type()), v);
}

/// Erases ops without uses and without side effects, last to first.
void eraseDeadOps(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if (op.use_empty() && isPure(&op) && !op.hasTrait<OpTrait::IsTerminator>())
      op.erase();
}

struct AutodiffPass : public infir2::impl::AutodiffPassBase<AutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(differentiate(getOperation())))
      signalPassFailure();
  }

  LogicalResult differentiate(ModuleOp module);
  LogicalResult buildStep(OpBuilder &b, func::FuncOp forward,
                          ArrayRef<std::pair<unsigned, ParamAttr>> params,
                          Block *body);
};

LogicalResult AutodiffPass::differentiate(ModuleOp module) {
  auto forward = module.lookupSymbol<func::FuncOp>(forwardName);
  if (!forward)
    return module.emitError()
           << "no function named '" << forwardName << "' to differentiate";
  if (module.lookupSymbol(trainStepName) && skipIfPresent)
    return success();
  if (module.lookupSymbol(trainStepName))
    return module.emitError() << "cannot create '" << trainStepName
                              << "': a symbol of that name already exists";
  if (forward.isExternal() || !llvm::hasSingleElement(forward.getBody()))
    return forward.emitError()
           << "expects a forward function with a body of one block";
  FunctionType fnType = forward.getFunctionType();
  auto lossType = fnType.getNumResults() == 1
                      ? dyn_cast<RankedTensorType>(fnType.getResult(0))
                      : RankedTensorType();
  if (!lossType || lossType.getRank() != 0 ||
      !isa<FloatType>(lossType.getElementType()))
    return forward.emitError()
           << "expects the forward function to return a single scalar loss "
              "(a 0-d float tensor), got "
           << fnType.getResults();
  SmallVector<std::pair<unsigned, ParamAttr>> params = getParams(forward);
  if (params.empty())
    return forward.emitError() << "has no trainable parameters (no argument "
                                  "carries 'infir2.param')";

  // Signature: the forward's arguments, then one FP32 accumulator per
  // parameter; results: the loss, then the updated accumulators.
  OpBuilder b(module.getContext());
  SmallVector<Type> argTypes(fnType.getInputs());
  SmallVector<Type> resultTypes{RankedTensorType::get({}, b.getF32Type())};
  SmallVector<DictionaryAttr> argAttrs, resultAttrs{b.getDictionaryAttr({})};
  for (unsigned i = 0; i < fnType.getNumInputs(); ++i)
    argAttrs.push_back(forward.getArgAttrDict(i) ? forward.getArgAttrDict(i)
                                                 : b.getDictionaryAttr({}));
  for (auto [index, param] : params) {
    auto accType =
        cast<RankedTensorType>(argTypes[index]).clone(b.getF32Type());
    auto gradOf = b.getDictionaryAttr(b.getNamedAttr(
        Infir2Dialect::getGradOfAttrName(), b.getStringAttr(param.getName())));
    argTypes.push_back(accType);
    argAttrs.push_back(gradOf);
    resultTypes.push_back(accType);
    resultAttrs.push_back(gradOf);
  }
  b.setInsertionPointAfter(forward);
  auto step = func::FuncOp::create(b, forward.getLoc(), trainStepName,
                                   b.getFunctionType(argTypes, resultTypes));
  step.setAllArgAttrs(argAttrs);
  step.setAllResultAttrs(resultAttrs);
  Block *body = step.addEntryBlock();
  b.setInsertionPointToStart(body);
  // Leave no half-built step behind for a library user when a rule fails.
  if (failed(buildStep(b, forward, params, body))) {
    step.erase();
    return failure();
  }
  return success();
}

LogicalResult
AutodiffPass::buildStep(OpBuilder &b, func::FuncOp forward,
                        ArrayRef<std::pair<unsigned, ParamAttr>> params,
                        Block *body) {
  FunctionType fnType = forward.getFunctionType();
  // Forward: a copy of the forward function's body.
  IRMapping mapping;
  Block &fwdBody = forward.getBody().front();
  for (auto [from, to] :
       llvm::zip(fwdBody.getArguments(), body->getArguments()))
    mapping.map(from, to);
  SmallVector<Operation *> forwardOps;
  for (Operation &op : fwdBody.without_terminator())
    forwardOps.push_back(b.clone(op, mapping));
  Value loss = mapping.lookup(fwdBody.getTerminator()->getOperand(0));

  // Only ops that depend on a parameter need a backward.
  llvm::DenseSet<Value> active;
  for (auto [index, param] : params)
    active.insert(body->getArgument(index));
  for (Operation *op : forwardOps)
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return active.contains(v); }))
      active.insert(op->result_begin(), op->result_end());

  // Backward, last op first.
  llvm::DenseMap<Value, Value> grads;
  auto accumulate = [&](Value v, Value g, Location loc) {
    auto [it, inserted] = grads.try_emplace(v, g);
    if (!inserted)
      it->second = AddOp::create(b, loc, it->second, g);
  };
  grads[loss] = splat(b, loss.getLoc(), loss.getType(), 1.0);
  for (Operation *op : llvm::reverse(forwardOps)) {
    if (!active.contains(op->getResult(0)))
      continue;
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      Value g = grads.lookup(r);
      any |= static_cast<bool>(g);
      resultGrads.push_back(g);
    }
    if (!any)
      continue;
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule)
      return op->emitOpError()
             << "has no gradient rule, but lies between a parameter and the "
                "loss";
    for (auto [r, g] : llvm::zip(op->getResults(), resultGrads))
      if (!g)
        g = splat(b, op->getLoc(), r.getType(), 0.0);
    SmallVector<Value> operandGrads;
    if (failed(rule.buildGradient(b, resultGrads, operandGrads)))
      return failure();
    if (operandGrads.size() != op->getNumOperands())
      return op->emitOpError()
             << "gradient rule returned " << operandGrads.size()
             << " gradients for " << op->getNumOperands() << " operands";
    for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads))
      if (g && active.contains(operand))
        accumulate(operand, g, op->getLoc());
  }

  // Accumulate the parameter gradients in FP32.
  SmallVector<Value> results{toF32(b, loss.getLoc(), loss)};
  unsigned accIndex = fnType.getNumInputs();
  for (auto [index, param] : params) {
    Value acc = body->getArgument(accIndex++);
    Value g = grads.lookup(body->getArgument(index));
    if (!g) {
      forward.emitWarning()
          << "parameter '" << param.getName()
          << "' does not reach the loss; its gradient is zero";
      results.push_back(acc);
      continue;
    }
    Location loc = body->getArgument(index).getLoc();
    results.push_back(AddOp::create(b, loc, acc, toF32(b, loc, g)));
  }
  func::ReturnOp::create(b, forward.getLoc(), results);
  // A tensor-parallel region's entries have done their part (their
  // gradients are the backward pass's infir2.tp_reduce): in the step they
  // are identities, dropped so that a norm fuses with the quantizations of
  // its output as without tensor parallelism.
  for (auto copy : llvm::make_early_inc_range(body->getOps<TPCopyOp>())) {
    copy.getResult().replaceAllUsesWith(copy.getInput());
    copy.erase();
  }
  eraseDeadOps(*body);
  return success();
}

} // namespace
