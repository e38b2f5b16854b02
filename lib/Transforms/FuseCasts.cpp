//===- FuseCasts.cpp - Fuse FP8 casts into the ops around them ------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "RecipeUtils.h"

#include "infir2/Dialect/FP8/IR/FP8Dialect.h"
#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SetVector.h"

namespace infir2 {
#define GEN_PASS_DEF_FUSECASTSPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

/// Folds a GEMM of two K-last dequantized operands into an
/// fp8.scaled_matmul of their FP8 data and scales.
void foldDequantize(GemmOpInterface gemm) {
  if (isa<fp8::ScaledMatmulOp>(gemm.getOperation()) ||
      !gemm.isSupportedGemm() || !gemm.isLhsContractionLast() ||
      !gemm.isRhsContractionLast())
    return;
  auto lhs = gemm.getGemmLhs().getDefiningOp<fp8::DequantizeOp>();
  auto rhs = gemm.getGemmRhs().getDefiningOp<fp8::DequantizeOp>();
  auto type = cast<RankedTensorType>(gemm.getGemmResult().getType());
  if (!lhs || !rhs || !isa<BFloat16Type, Float32Type>(type.getElementType()))
    return;
  // scaled_matmul's verifier holds the operands to the same shape rules the
  // GEMM's own form implies once both are K-last.
  recipe::replaceWithScaledMatmul(gemm, lhs.getData(), lhs.getScale(),
                                  lhs.getGranularity(), rhs.getData(),
                                  rhs.getScale(), rhs.getGranularity());
  for (fp8::DequantizeOp d : {lhs, rhs})
    if (d->use_empty())
      d->erase();
}

/// Moves `producer` and the quantizations of its result into one fp8.fused
/// op. A scaled_matmul is fused only when nothing but quantizations reads
/// its result (FP8 output); a norm or SwiGLU keeps yielding its result to
/// any other reader.
void fuseQuantizations(Operation *producer) {
  Value value = producer->getResult(0);
  llvm::SetVector<Operation *> quantizations;
  bool otherReaders = false;
  for (Operation *user : value.getUsers()) {
    if (isa<fp8::QuantizeOp, fp8::QuantizeDualOp>(user) &&
        user->getBlock() == producer->getBlock())
      quantizations.insert(user);
    else
      otherReaders = true;
  }
  if (quantizations.empty() ||
      (otherReaders && isa<fp8::ScaledMatmulOp>(producer)))
    return;

  SmallVector<Value> yielded;
  if (otherReaders)
    yielded.push_back(value);
  for (Operation *q : quantizations)
    llvm::append_range(yielded, q->getResults());

  // The quantizations read nothing but `value`, so they may move up to the
  // producer; everything they feed comes after them.
  OpBuilder b(producer);
  auto fused = fp8::FusedOp::create(b, producer->getLoc(),
                                    ValueRange(yielded).getTypes());
  Block *body = b.createBlock(&fused.getBody());
  producer->moveBefore(body, body->end());
  for (Operation *q : quantizations)
    q->moveBefore(body, body->end());
  b.setInsertionPointToEnd(body);
  fp8::YieldOp::create(b, producer->getLoc(), yielded);
  for (auto [inner, outer] : llvm::zip_equal(yielded, fused.getResults()))
    inner.replaceUsesWithIf(outer, [&](OpOperand &use) {
      return !fused->isAncestor(use.getOwner());
    });
}

struct FuseCastsPass : public infir2::impl::FuseCastsPassBase<FuseCastsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<GemmOpInterface> gemms;
    getOperation().walk([&](GemmOpInterface gemm) { gemms.push_back(gemm); });
    for (GemmOpInterface gemm : gemms)
      foldDequantize(gemm);

    SmallVector<Operation *> producers;
    getOperation().walk([&](Operation *op) {
      if (isa<RMSNormOp, SwigluOp, fp8::ScaledMatmulOp>(op) &&
          !isa<fp8::FusedOp>(op->getParentOp()))
        producers.push_back(op);
    });
    for (Operation *producer : producers)
      fuseQuantizations(producer);
  }
};

} // namespace
