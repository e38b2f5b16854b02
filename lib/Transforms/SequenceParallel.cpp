//===- SequenceParallel.cpp - The sequence split between the regions ------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Megatron-LM's sequence parallelism, on a forward --infir2-tensor-parallel
// has just sharded: between the tensor-parallel regions (the norms and the
// residual adds) each rank keeps its slice of the sequence instead of the
// whole tensor. A region's exit (tp_reduce) becomes a reduce-scatter, its
// entry (tp_copy) an all-gather, and a norm's weight, whole on every rank,
// enters through tp_copy so that its gradient is summed over the slices.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace infir2;

namespace {

/// The sequence dimension of a `[batch, seq, hidden]` activation.
constexpr int64_t kSeqDim = 1;

RankedTensorType sliced(Type type, int64_t size) {
  auto t = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(t.getShape());
  shape[kSeqDim] /= size;
  return t.clone(shape);
}

/// Whether `v` is a `[batch, seq, hidden]` float tensor whose sequence
/// splits over `size` ranks; else an error at `op`.
LogicalResult checkSplits(Operation *op, Value v, int64_t size) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getRank() == 3 && t.getDimSize(kSeqDim) % size == 0)
    return success();
  InFlightDiagnostic d = op->emitOpError()
                         << "cannot split the sequence of " << t << " over "
                         << size << " ranks: ";
  if (t.getRank() != 3)
    d << "sequence parallelism splits [batch, seq, hidden] activations";
  else
    d << "its " << t.getDimSize(kSeqDim) << " positions do not divide";
  return failure();
}

/// Each of `ops` (a region's exits or entries) replaced by `NewOp` along the
/// sequence, of the same result type.
template <typename NewOp, typename Op>
void replaceAlongSequence(ArrayRef<Op> ops, IntegerAttr size, IntegerAttr dim) {
  for (Op op : ops) {
    OpBuilder b(op);
    auto next = NewOp::create(b, op.getLoc(), op.getResult().getType(),
                              op.getInput(), size, dim);
    op.getResult().replaceAllUsesWith(next.getResult());
    op.erase();
  }
}

} // namespace

LogicalResult infir2::splitSequence(func::FuncOp fn, int64_t size) {
  MLIRContext *ctx = fn.getContext();
  Builder attrs(ctx);
  IntegerAttr sizeAttr = attrs.getI64IntegerAttr(size),
              dimAttr = attrs.getI64IntegerAttr(kSeqDim);
  // The values between the regions, in order: each region's sum, and what
  // the norms, residual adds and conversions make of them.
  llvm::SetVector<Value> split;
  SmallVector<TPReduceOp> exits;
  SmallVector<TPCopyOp> entries;
  SmallVector<RMSNormOp> norms;
  for (Operation &op : fn.getBody().front()) {
    if (auto exit = dyn_cast<TPReduceOp>(op)) {
      if (failed(checkSplits(exit, exit.getResult(), size)))
        return failure();
      exits.push_back(exit);
      split.insert(exit.getResult());
      continue;
    }
    bool reads = llvm::any_of(op.getOperands(),
                              [&](Value v) { return split.contains(v); });
    if (!reads)
      continue;
    if (auto entry = dyn_cast<TPCopyOp>(op)) {
      entries.push_back(entry);
      continue;
    }
    if (auto norm = dyn_cast<RMSNormOp>(op);
        norm && split.contains(norm.getInput())) {
      norms.push_back(norm);
      split.insert(norm.getResult());
      continue;
    }
    if (isa<AddOp, MulOp, ConvertOp>(op) &&
        llvm::all_of(op.getOperands(),
                     [&](Value v) { return split.contains(v); })) {
      split.insert(op.getResult(0));
      continue;
    }
    // What the function returns is whole.
    if (op.hasTrait<OpTrait::IsTerminator>())
      return fn.emitOpError() << "returns a tensor sequence parallelism "
                                 "splits by positions";
    return op.emitOpError()
           << "reads the residual stream, which sequence parallelism splits "
              "by positions: only norms, residual adds, products and "
              "conversions of whole split tensors run between the regions";
  }
  for (Value v : split)
    v.setType(sliced(v.getType(), size));
  replaceAlongSequence<TPReduceScatterOp>(ArrayRef(exits), sizeAttr, dimAttr);
  replaceAlongSequence<TPAllGatherOp>(ArrayRef(entries), sizeAttr, dimAttr);
  // A norm's weight is whole on every rank; each rank's positions give it a
  // partial gradient, which the entry's gradient sums.
  for (RMSNormOp norm : norms) {
    OpBuilder b(norm);
    Value w = norm.getWeight();
    auto copy = TPCopyOp::create(b, norm.getLoc(), w.getType(), w, sizeAttr);
    norm.getWeightMutable().assign(copy);
  }
  return success();
}
