//===- DataParallel.cpp - Gradient all-reduce before the optimizer --------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace infir2 {
#define GEN_PASS_DEF_DATAPARALLELPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

struct DataParallelPass
    : public infir2::impl::DataParallelPassBase<DataParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    auto fn = getOperation().lookupSymbol<func::FuncOp>(stepName);
    if (!fn) {
      getOperation().emitError()
          << "no @" << stepName
          << " to make data-parallel (run --infir2-optimizer first)";
      return signalPassFailure();
    }
    if (!(bucketMB > 0.0)) {
      getOperation().emitError()
          << "bucket-mb must be positive, got " << bucketMB;
      return signalPassFailure();
    }
    if (!fn.getOps<AllReduceOp>().empty())
      return; // already data-parallel
    Block &body = fn.getBody().front();
    SmallVector<BlockArgument> grads;
    for (BlockArgument arg : body.getArguments())
      if (fn.getArgAttr(arg.getArgNumber(), Infir2Dialect::getGradOfAttrName()))
        grads.push_back(arg);
    if (grads.empty()) {
      fn.emitError() << "has no gradient accumulators (arguments carrying '"
                     << Infir2Dialect::getGradOfAttrName() << "')";
      return signalPassFailure();
    }

    OpBuilder b = OpBuilder::atBlockBegin(&body);
    int64_t limit = static_cast<int64_t>(bucketMB * 1024 * 1024);
    SmallVector<Value> bucket;
    int64_t bytes = 0;
    auto flush = [&] {
      if (bucket.empty())
        return;
      auto reduce = AllReduceOp::create(b, fn.getLoc(), bucket);
      for (auto [grad, sum] : llvm::zip_equal(bucket, reduce.getResults()))
        grad.replaceAllUsesExcept(sum, reduce);
      bucket.clear();
      bytes = 0;
    };
    for (BlockArgument g : grads) {
      int64_t size = cast<RankedTensorType>(g.getType()).getNumElements() * 4;
      if (!bucket.empty() && bytes + size > limit)
        flush();
      bucket.push_back(g);
      bytes += size;
    }
    flush();
  }
};

} // namespace
