//===- FuseAccumulation.cpp - Gradients added into their accumulators ----===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace infir2 {
#define GEN_PASS_DEF_FUSEACCUMULATIONPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

/// The result `v` is, directly or through one conversion, read by nothing
/// else: an op's result that can take an accumulator and has none yet;
/// null otherwise.
OpResult soleAccumulatingResult(Value v) {
  if (auto convert = v.getDefiningOp<ConvertOp>()) {
    if (!convert->hasOneUse())
      return {};
    v = convert.getInput();
  }
  auto result = dyn_cast<OpResult>(v);
  if (!result || !result.hasOneUse())
    return {};
  auto op = dyn_cast<AccumulatingOpInterface>(result.getOwner());
  if (!op || op.getAccumulator() || op.getAccumulatedResult() != result)
    return {};
  return result;
}

/// Whether `acc` is an FP32 gradient accumulator the op reading it may add
/// into: an argument of the function `user` is in (its entry block), or the
/// accumulated result of an op whose own accumulator is one, read by `user`
/// alone.
bool isAccumulator(Value acc, Operation *user) {
  auto fn = user->getParentOfType<FunctionOpInterface>();
  while (auto result = dyn_cast<OpResult>(acc)) {
    auto op = dyn_cast<AccumulatingOpInterface>(result.getOwner());
    if (!op || !op.getAccumulator() || op.getAccumulatedResult() != result ||
        !result.hasOneUse())
      return false;
    acc = op.getAccumulator();
  }
  auto arg = cast<BlockArgument>(acc);
  return fn && arg.getOwner() == &fn.getFunctionBody().front();
}

/// Calls `rewrite(acc, other)` for each order of `add`'s operands in which
/// `acc` is an FP32 accumulator (isAccumulator) and `other` has its type,
/// until one succeeds.
template <typename Rewrite>
LogicalResult forEachAccumulator(AddOp add, Rewrite rewrite) {
  auto type = cast<RankedTensorType>(add.getType());
  if (!type.getElementType().isF32())
    return failure();
  for (unsigned side : {0u, 1u}) {
    Value acc = add->getOperand(side), other = add->getOperand(1 - side);
    if (acc.getType() == type && other.getType() == type &&
        isAccumulator(acc, add) && succeeded(rewrite(acc, other)))
      return success();
  }
  return failure();
}

/// Replaces `add`, whose operand `other` is `result` (or its conversion),
/// by `result`'s op rebuilt at the rewriter's insertion point with
/// accumulator `acc`; the conversion goes, and the op's other results move
/// over.
void foldIntoProducer(PatternRewriter &rewriter, AddOp add, Value other,
                      OpResult result, Value acc) {
  Operation *producer = result.getOwner();
  Operation *fused =
      cast<AccumulatingOpInterface>(producer).cloneWithAccumulator(rewriter,
                                                                   acc);
  Operation *convert = other.getDefiningOp<ConvertOp>();
  rewriter.replaceOp(add, fused->getResult(result.getResultNumber()));
  if (convert)
    rewriter.eraseOp(convert);
  rewriter.replaceOp(producer, fused->getResults());
}

/// add(acc, [convert] r) -> op acc(acc), for `r` a result of an op that can
/// add into an accumulator (soleAccumulatingResult) and `acc` an FP32
/// accumulator (isAccumulator). The op stays where it was (its operands die
/// there, as before), or moves to just after the accumulator's producer
/// when that comes later; the planner decides whether it writes the
/// accumulator's buffer in place.
struct AddIntoAccumulator : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    return forEachAccumulator(add, [&](Value acc, Value other) {
      OpResult result = soleAccumulatingResult(other);
      if (!result)
        return failure();
      Operation *producer = result.getOwner();
      Operation *accDef = acc.getDefiningOp();
      bool later = accDef && accDef->getBlock() == producer->getBlock() &&
                   producer->isBeforeInBlock(accDef);
      // (Moving the op would move its other results' definitions.)
      if (accDef && (accDef->getBlock() != producer->getBlock() ||
                     (later && producer->getNumResults() != 1)))
        return failure();
      if (later)
        rewriter.setInsertionPointAfter(accDef);
      else
        rewriter.setInsertionPoint(producer);
      foldIntoProducer(rewriter, add, other, result, acc);
      return success();
    });
  }
};

/// add(acc, [convert] add(x, y)) -> add(add(acc, [convert] x), [convert] y)
/// for `x` and `y` results that AddIntoAccumulator then folds in one after
/// the other (a tied embedding's two gradients): the sum is not rounded
/// before it reaches the accumulator.
struct SplitSumIntoAccumulator : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    return forEachAccumulator(add, [&](Value acc, Value other) {
      auto convert = other.getDefiningOp<ConvertOp>();
      Value sumValue = convert ? convert.getInput() : other;
      auto sum = sumValue.getDefiningOp<AddOp>();
      if (!sum || !sum->hasOneUse() || (convert && !convert->hasOneUse()) ||
          sum.getLhs().getType() != sum.getRhs().getType() ||
          sum.getLhs() == sum.getRhs() ||
          !soleAccumulatingResult(sum.getLhs()) ||
          !soleAccumulatingResult(sum.getRhs()))
        return failure();
      Type type = add.getType();
      auto widened = [&](Value v) -> Value {
        if (v.getType() == type)
          return v;
        return ConvertOp::create(rewriter, add.getLoc(), type, v);
      };
      rewriter.setInsertionPoint(add);
      Value first =
          AddOp::create(rewriter, add.getLoc(), acc, widened(sum.getLhs()));
      rewriter.replaceOpWithNewOp<AddOp>(add, first, widened(sum.getRhs()));
      if (convert)
        rewriter.eraseOp(convert);
      rewriter.eraseOp(sum);
      return success();
    });
  }
};

/// Whether `x` is available where `op` runs: made before it in its block,
/// or an argument of that block.
bool madeBefore(Value x, Operation *op) {
  if (Operation *def = x.getDefiningOp())
    return def->getBlock() == op->getBlock() && def->isBeforeInBlock(op);
  return cast<BlockArgument>(x).getOwner() == op->getBlock();
}

/// add(x, gemm) -> gemm acc(x), for a GEMM (GemmOpInterface and
/// AccumulatingOpInterface) without an accumulator, read by that add alone,
/// of the add's type (no broadcast; f32 or bf16), and `x` made before it: a
/// residual, or a sum of two gradients, rounded once instead of twice, in
/// one call. The GEMM stays where it was.
struct AddIntoProduct : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(add.getType());
    if (!type.getElementType().isF32() && !type.getElementType().isBF16())
      return failure();
    for (unsigned side : {0u, 1u}) {
      auto result = dyn_cast<OpResult>(add->getOperand(side));
      Value x = add->getOperand(1 - side);
      if (!result || result == x || result.getType() != type ||
          x.getType() != type || !result.hasOneUse())
        continue;
      Operation *gemm = result.getOwner();
      auto accumulating = dyn_cast<AccumulatingOpInterface>(gemm);
      if (!accumulating || !isa<GemmOpInterface>(gemm) ||
          accumulating.getAccumulator() ||
          accumulating.getAccumulatedResult() != result)
        continue;
      if (!madeBefore(x, gemm))
        continue;
      rewriter.setInsertionPoint(gemm);
      foldIntoProducer(rewriter, add, result, result, x);
      return success();
    }
    return failure();
  }
};

/// add(x, rms_norm_grad's input_grad) -> rms_norm_grad residual(x), for a
/// gradient read by that add alone and `x` of its type made before the
/// norm's gradient: the residual stream's gradient and the norm's summed
/// in FP32 and rounded once, in the norm gradient's call.
struct AddIntoNormGradient : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    for (unsigned side : {0u, 1u}) {
      Value g = add->getOperand(side), x = add->getOperand(1 - side);
      auto norm = g.getDefiningOp<RMSNormGradOp>();
      if (!norm || g != norm.getInputGrad() || norm.getResidual() || g == x ||
          !g.hasOneUse() || x.getType() != add.getType() ||
          g.getType() != add.getType() || !madeBefore(x, norm))
        continue;
      rewriter.setInsertionPoint(norm);
      auto fused = RMSNormGradOp::create(
          rewriter, norm.getLoc(), norm.getInput(), norm.getWeight(),
          norm.getResultGrad(), norm.getEpsilonAttr(), x, norm.getAcc());
      rewriter.replaceOp(add, fused.getInputGrad());
      rewriter.replaceOp(norm, fused->getResults());
      return success();
    }
    return failure();
  }
};

/// add(acc, [convert] tp_reduce(r)) -> add(acc, tp_reduce(op acc(zeros))),
/// for `r` a result of an op that can add into an accumulator: a gradient
/// summed over a tensor-parallel group (a norm's weight under sequence
/// parallelism) is made and summed in FP32, so that it reaches its
/// accumulator unrounded, as without the group. (The accumulator itself
/// cannot be the op's: the group would sum it N times.)
struct ReduceInFP32 : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    return forEachAccumulator(add, [&](Value acc, Value other) {
      auto convert = other.getDefiningOp<ConvertOp>();
      Value summed = convert ? convert.getInput() : other;
      auto reduce = summed.getDefiningOp<TPReduceOp>();
      if (!reduce || !reduce->hasOneUse() || (convert && !convert->hasOneUse()))
        return failure();
      OpResult result = soleAccumulatingResult(reduce.getInput());
      if (!result || result.getType() == acc.getType())
        return failure();
      Operation *producer = result.getOwner();
      rewriter.setInsertionPoint(producer);
      auto type = cast<RankedTensorType>(acc.getType());
      Value zeros = arith::ConstantOp::create(
          rewriter, producer->getLoc(),
          DenseElementsAttr::get(type, rewriter.getF32FloatAttr(0.0f)));
      Operation *fused =
          cast<AccumulatingOpInterface>(producer).cloneWithAccumulator(rewriter,
                                                                       zeros);
      rewriter.setInsertionPoint(reduce);
      auto sum = TPReduceOp::create(rewriter, reduce.getLoc(), type,
                                    fused->getResult(result.getResultNumber()),
                                    reduce.getSizeAttr());
      rewriter.setInsertionPoint(add);
      rewriter.replaceOpWithNewOp<AddOp>(add, acc, sum.getResult());
      if (convert)
        rewriter.eraseOp(convert);
      rewriter.eraseOp(reduce);
      rewriter.replaceOp(producer, fused->getResults());
      return success();
    });
  }
};

struct FuseAccumulationPass
    : public infir2::impl::FuseAccumulationPassBase<FuseAccumulationPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AddIntoAccumulator, SplitSumIntoAccumulator, AddIntoProduct,
                 AddIntoNormGradient, ReduceInFP32>(&getContext());
    // Only this rewrite: no folding, no constants moved or merged, so the
    // rest of the step reads as the recipe left it.
    GreedyRewriteConfig config;
    config.enableFolding(false).enableConstantCSE(false);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      signalPassFailure();
  }
};

} // namespace
