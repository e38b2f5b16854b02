//===- DataParallel.cpp - Collectives in the optimizer step ---------------===//
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

int64_t bytesOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return t.getNumElements() * t.getElementTypeBitWidth() / 8;
}

/// Splits `values` into buckets of at most `limit` bytes, in order (a tensor
/// larger than a bucket is a bucket of its own), and calls `emit` on each.
void forEachBucket(ArrayRef<Value> values, int64_t limit,
                   function_ref<void(ArrayRef<Value>)> emit) {
  SmallVector<Value> bucket;
  int64_t bytes = 0;
  for (Value v : values) {
    if (!bucket.empty() && bytes + bytesOf(v) > limit) {
      emit(bucket);
      bucket.clear();
      bytes = 0;
    }
    bucket.push_back(v);
    bytes += bytesOf(v);
  }
  if (!bucket.empty())
    emit(bucket);
}

/// Rank's row shard of `t` over `world` ranks: ceil(d0 / world) rows.
RankedTensorType shardOf(Type t, int64_t world) {
  auto full = cast<RankedTensorType>(t);
  SmallVector<int64_t> shape(full.getShape());
  shape[0] = llvm::divideCeil(shape[0], world);
  return full.clone(shape);
}

struct DataParallelPass
    : public infir2::impl::DataParallelPassBase<DataParallelPass> {
  using Base::Base;

  void runOnOperation() override;

private:
  LogicalResult shardOptimizerState(func::FuncOp fn,
                                    ArrayRef<BlockArgument> grads);
  int64_t bucketBytes() const {
    return static_cast<int64_t>(bucketMB * 1024 * 1024);
  }
};

void DataParallelPass::runOnOperation() {
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
  if (!zero1 && worldSize != 0) {
    getOperation().emitError()
        << "world-size=" << static_cast<int64_t>(worldSize)
        << " is for zero1=true only: the gradient all-reduce runs at any "
           "world size";
    return signalPassFailure();
  }
  if (zero1 && worldSize < 1) {
    getOperation().emitError()
        << "zero1 needs world-size=N, the number of data-parallel ranks "
           "(got "
        << static_cast<int64_t>(worldSize) << ")";
    return signalPassFailure();
  }
  bool allReduces = !fn.getOps<AllReduceOp>().empty();
  bool scatters = !fn.getOps<ReduceScatterOp>().empty();
  if (zero1 && allReduces) {
    fn.emitError() << "already all-reduces its gradients; ZeRO-1 shards a "
                      "step that is not yet data-parallel";
    return signalPassFailure();
  }
  if (allReduces || scatters)
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
  if (zero1) {
    if (failed(shardOptimizerState(fn, grads)))
      signalPassFailure();
    return;
  }

  OpBuilder b = OpBuilder::atBlockBegin(&body);
  SmallVector<Value> values(grads.begin(), grads.end());
  forEachBucket(values, bucketBytes(), [&](ArrayRef<Value> bucket) {
    auto reduce = AllReduceOp::create(b, fn.getLoc(), bucket);
    for (auto [grad, sum] : llvm::zip_equal(bucket, reduce.getResults()))
      Value(grad).replaceAllUsesExcept(sum, reduce);
  });
}

LogicalResult
DataParallelPass::shardOptimizerState(func::FuncOp fn,
                                      ArrayRef<BlockArgument> grads) {
  Block &body = fn.getBody().front();
  auto hasAttr = [&](unsigned i, ArrayRef<StringRef> names, bool result) {
    for (StringRef name : names)
      if (result ? fn.getResultAttr(i, name) : fn.getArgAttr(i, name))
        return true;
    return false;
  };
  SmallVector<StringRef> stateAttrs = {Infir2Dialect::getMasterOfAttrName(),
                                       Infir2Dialect::getMoment1OfAttrName(),
                                       Infir2Dialect::getMoment2OfAttrName()};

  // Every value that becomes a shard, and what may read it.
  SmallVector<Value> sharded;
  for (BlockArgument arg : body.getArguments())
    if (hasAttr(arg.getArgNumber(), stateAttrs, /*result=*/false)) {
      if (cast<RankedTensorType>(arg.getType()).getRank() == 0)
        return fn.emitError() << "argument #" << arg.getArgNumber()
                              << " is a scalar; ZeRO-1 shards rows";
      arg.setType(shardOf(arg.getType(), worldSize));
      sharded.push_back(arg);
    }

  // The gradient sums, each rank's rows only.
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  SmallVector<Value> values(grads.begin(), grads.end());
  forEachBucket(values, bucketBytes(), [&](ArrayRef<Value> bucket) {
    SmallVector<Type> types;
    for (Value g : bucket)
      types.push_back(shardOf(g.getType(), worldSize));
    auto scatter = ReduceScatterOp::create(b, fn.getLoc(), types, bucket,
                                           b.getI64IntegerAttr(worldSize));
    for (auto [grad, shard] : llvm::zip_equal(bucket, scatter.getResults())) {
      Value(grad).replaceAllUsesExcept(shard, scatter);
      sharded.push_back(shard);
    }
  });

  // Propagate the shard types through the update and its casts; anything
  // else reading a shard is a step this pass does not understand.
  DenseSet<Operation *> retyped;
  for (size_t i = 0; i < sharded.size(); ++i) {
    Value v = sharded[i];
    for (Operation *user : v.getUsers()) {
      if (isa<AdamWOp, SGDOp, ConvertOp>(user)) {
        if (retyped.insert(user).second)
          for (Value r : user->getResults()) {
            r.setType(shardOf(r.getType(), worldSize));
            sharded.push_back(r);
          }
      } else if (auto norm = dyn_cast<GlobalNormOp>(user)) {
        norm.setAcrossRanks(true);
      } else if (!isa<func::ReturnOp>(user)) {
        return user->emitOpError()
               << "reads the optimizer state or a gradient sum, which ZeRO-1 "
                  "would shard, and the pass does not know how to shard it";
      }
    }
  }

  // The whole working weights, gathered from every rank's updated shard.
  Operation *ret = body.getTerminator();
  SmallVector<unsigned> gatherAt;
  SmallVector<Value> shards;
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    bool state = hasAttr(i, stateAttrs, /*result=*/true);
    bool working = static_cast<bool>(
        fn.getResultAttr(i, Infir2Dialect::getWorkingCopyOfAttrName()));
    bool isShard = llvm::is_contained(sharded, v);
    if (working && isShard) {
      gatherAt.push_back(i);
      shards.push_back(v);
    } else if (state != isShard) {
      return fn.emitError() << "result #" << i << " is "
                            << (state ? "optimizer state but not a shard"
                                      : "a shard but not optimizer state")
                            << " after ZeRO-1 sharding";
    }
  }
  b.setInsertionPoint(ret);
  size_t next = 0;
  forEachBucket(shards, bucketBytes(), [&](ArrayRef<Value> bucket) {
    SmallVector<Type> types;
    for (unsigned i : ArrayRef(gatherAt).slice(next, bucket.size()))
      types.push_back(fn.getResultTypes()[i]);
    auto gather = AllGatherOp::create(b, fn.getLoc(), types, bucket,
                                      b.getI64IntegerAttr(worldSize));
    for (Value whole : gather.getResults())
      ret->setOperand(gatherAt[next++], whole);
  });

  fn.setFunctionType(FunctionType::get(fn.getContext(), body.getArgumentTypes(),
                                       ret->getOperandTypes()));
  return success();
}

} // namespace
