//===- FuseAccumulation.cpp - GEMMs that add into an accumulator ----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

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

/// `gemm` rebuilt with accumulator `acc` and result type `type` (f32), its
/// recipe attributes kept.
Operation *withAccumulator(PatternRewriter &rewriter, Operation *gemm,
                           Value acc, RankedTensorType type, Location loc) {
  Operation *fused;
  if (auto mm = dyn_cast<MatmulOp>(gemm))
    fused = MatmulOp::create(rewriter, loc, type, mm.getLhs(), mm.getRhs(),
                             mm.getTransposeLhs(), mm.getTransposeRhs(), acc);
  else {
    auto sm = cast<fp8::ScaledMatmulOp>(gemm);
    fused = fp8::ScaledMatmulOp::create(
        rewriter, loc, type, sm.getLhs(), sm.getLhsScale(),
        sm.getLhsGranularity(), sm.getRhs(), sm.getRhsScale(),
        sm.getRhsGranularity(), acc);
  }
  for (NamedAttribute attr : gemm->getDiscardableAttrs())
    fused->setAttr(attr.getName(), attr.getValue());
  return fused;
}

/// The GEMM without an accumulator that `v` is, directly or through one
/// conversion, read by nothing else; null otherwise.
Operation *soleGemmOf(Value v) {
  if (auto convert = v.getDefiningOp<ConvertOp>()) {
    if (!convert->hasOneUse())
      return nullptr;
    v = convert.getInput();
  }
  Operation *def = v.getDefiningOp();
  if (!def || !def->hasOneUse())
    return nullptr;
  if (auto mm = dyn_cast<MatmulOp>(def))
    return mm.getAcc() ? nullptr : def;
  if (auto sm = dyn_cast<fp8::ScaledMatmulOp>(def))
    return sm.getAcc() ? nullptr : def;
  return nullptr;
}

/// Whether `v` is an argument of the function `op` is in (its entry block).
bool isFunctionArgument(Value v, Operation *op) {
  auto arg = dyn_cast<BlockArgument>(v);
  auto fn = op->getParentOfType<FunctionOpInterface>();
  return arg && fn && arg.getOwner() == &fn.getFunctionBody().front();
}

/// add(acc, [convert] gemm) -> gemm acc(acc), for an FP32 accumulator that
/// is an argument of the function. The GEMM stays where it was (its
/// operands die there, as before); the planner still decides whether it
/// may write the accumulator's slot in place.
struct AddIntoAccumulator : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(add.getType());
    if (!type.getElementType().isF32())
      return failure();
    for (unsigned side : {0u, 1u}) {
      Value acc = add->getOperand(side), other = add->getOperand(1 - side);
      if (acc.getType() != type || other.getType() != type ||
          !isFunctionArgument(acc, add))
        continue;
      Operation *gemm = soleGemmOf(other);
      if (!gemm)
        continue;
      Operation *convert = other.getDefiningOp<ConvertOp>();
      rewriter.setInsertionPoint(gemm);
      rewriter.replaceOp(add,
                         withAccumulator(rewriter, gemm, acc, type,
                                         gemm->getLoc())
                             ->getResults());
      if (convert)
        rewriter.eraseOp(convert);
      rewriter.eraseOp(gemm);
      return success();
    }
    return failure();
  }
};

struct FuseAccumulationPass
    : public infir2::impl::FuseAccumulationPassBase<FuseAccumulationPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AddIntoAccumulator>(&getContext());
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
