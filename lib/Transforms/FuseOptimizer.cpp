//===- FuseOptimizer.cpp - One AdamW update for the whole step ------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"

namespace infir2 {
#define GEN_PASS_DEF_FUSEOPTIMIZERPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

/// Whether `a` and `b` may share one group: the same scalar inputs and the
/// same hyperparameters but the weight decay.
bool sameStep(AdamWOp a, AdamWOp b) {
  return a.getLearningRate() == b.getLearningRate() &&
         a.getStep() == b.getStep() && a.getGradScale() == b.getGradScale() &&
         a.getGradNorm() == b.getGradNorm() && a.getBeta1() == b.getBeta1() &&
         a.getBeta2() == b.getBeta2() && a.getEpsilon() == b.getEpsilon() &&
         a.getMaxGradNorm() == b.getMaxGradNorm() &&
         getElementTypeOrSelf(a.getMoment1().getType()) ==
             getElementTypeOrSelf(b.getMoment1().getType());
}

/// The conversion of `update`'s new parameter to a narrower working copy,
/// if it has exactly one.
ConvertOp workingCopyOf(AdamWOp update) {
  ConvertOp only;
  for (Operation *user : update.getNewParam().getUsers())
    if (auto c = dyn_cast<ConvertOp>(user)) {
      if (only)
        return nullptr;
      only = c;
    }
  return only;
}

struct FuseOptimizerPass
    : public infir2::impl::FuseOptimizerPassBase<FuseOptimizerPass> {
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp fn) {
      if (fn.isExternal() || !llvm::hasSingleElement(fn.getBody()))
        return;
      SmallVector<AdamWOp> updates;
      for (auto update : fn.getBody().front().getOps<AdamWOp>())
        if (updates.empty() || sameStep(updates.front(), update))
          updates.push_back(update);
      if (updates.size() >= 2)
        fuse(updates);
    });
  }

  /// Replaces `updates` (and the conversions to their working copies) by
  /// one adamw_group at the first of them; every operand must be defined
  /// before it (in an optimizer step: arguments, the all-reduce, the norm).
  void fuse(MutableArrayRef<AdamWOp> updates) {
    AdamWOp first = updates.front();
    DominanceInfo dominance;
    for (AdamWOp u : updates)
      for (Value v : u->getOperands())
        if (!dominance.properlyDominates(v, first))
          return;
    SmallVector<Value> params, grads, m1, m2;
    SmallVector<double> decays;
    SmallVector<int64_t> working;
    SmallVector<Type> workingTypes;
    SmallVector<ConvertOp> converts;
    for (auto [i, u] : llvm::enumerate(updates)) {
      params.push_back(u.getParam());
      grads.push_back(u.getGrad());
      m1.push_back(u.getMoment1());
      m2.push_back(u.getMoment2());
      decays.push_back(u.getWeightDecay().convertToDouble());
      if (ConvertOp c = workingCopyOf(u)) {
        working.push_back(i);
        workingTypes.push_back(c.getType());
        converts.push_back(c);
      }
    }
    OpBuilder b(first);
    TypeRange types = ValueRange(params).getTypes();
    TypeRange momentTypes = ValueRange(m1).getTypes();
    auto group = AdamWGroupOp::create(
        b, first.getLoc(), types, momentTypes, momentTypes, workingTypes,
        params, grads, m1, m2, first.getLearningRate(), first.getStep(),
        first.getGradScale(), first.getGradNorm(), first.getBeta1Attr(),
        first.getBeta2Attr(), first.getEpsilonAttr(),
        first.getMaxGradNormAttr(), b.getDenseF64ArrayAttr(decays),
        b.getDenseI64ArrayAttr(working));
    for (auto [k, c] : llvm::enumerate(converts)) {
      c.getResult().replaceAllUsesWith(group.getWorkingCopies()[k]);
      c.erase();
    }
    for (auto [i, u] : llvm::enumerate(updates)) {
      u.getNewParam().replaceAllUsesWith(group.getNewParams()[i]);
      u.getNewMoment1().replaceAllUsesWith(group.getNewMoments1()[i]);
      u.getNewMoment2().replaceAllUsesWith(group.getNewMoments2()[i]);
      u.erase();
    }
  }
};

} // namespace
