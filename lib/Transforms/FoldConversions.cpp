//===- FoldConversions.cpp - Ops that write the converted tensor ----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace infir2 {
#define GEN_PASS_DEF_FOLDCONVERSIONSPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

/// convert(cross_entropy_grad) of FP32 logits to bf16 -> cross_entropy_grad
/// with a bf16 result, where the conversion is the gradient's only reader.
struct FoldIntoCrossEntropyGrad : OpRewritePattern<ConvertOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvertOp convert,
                                PatternRewriter &rewriter) const override {
    auto grad = convert.getInput().getDefiningOp<CrossEntropyGradOp>();
    if (!grad || !grad->hasOneUse())
      return rewriter.notifyMatchFailure(convert, "not a gradient's only use");
    // The runtimes compute the gradient in FP32: narrower logits' gradient
    // is rounded to their type first, which the fold would drop.
    Type from = cast<ShapedType>(grad.getLogits().getType()).getElementType(),
         to = cast<ShapedType>(convert.getType()).getElementType();
    if (!isa<Float32Type>(from) || !isa<BFloat16Type>(to))
      return rewriter.notifyMatchFailure(convert, "not FP32 logits to bf16");
    rewriter.modifyOpInPlace(
        grad, [&] { grad.getLogitsGrad().setType(convert.getType()); });
    rewriter.replaceOp(convert, grad.getLogitsGrad());
    return success();
  }
};

struct FoldConversionsPass
    : infir2::impl::FoldConversionsPassBase<FoldConversionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldIntoCrossEntropyGrad>(&getContext());
    // Only this rewrite: no folding, no constants moved or merged (ops
    // already dead are still erased).
    GreedyRewriteConfig config;
    config.enableFolding(false).enableConstantCSE(false);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace
