//===- TensorParallel.cpp - A model's layers over a tensor-parallel group -===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Megatron-LM's tensor parallelism, derived from the unsharded forward:
// attention heads and the MLP's width are split over the ranks, the GEMMs
// that make them column-parallel, the GEMMs that read them row-parallel,
// with infir2.tp_copy where a layer's input enters and infir2.tp_reduce
// where its output leaves; the vocabulary too: the embedding table and the
// LM head by rows, the loss from each rank's columns of the logits (a
// vocabulary the size does not divide stays whole on every rank). The
// shapes in the result are one rank's.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace infir2 {
#define GEN_PASS_DEF_TENSORPARALLELPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// `v`'s type with dimension `dim` divided by `size`.
RankedTensorType divided(Value v, int64_t dim, int64_t size) {
  SmallVector<int64_t> shape(tensorOf(v).getShape());
  shape[dim] /= size;
  return tensorOf(v).clone(shape);
}

/// What the pass shards: parameters (with the dimension split), values
/// whose last dimension is split, and the GEMMs and ops around them.
struct Plan {
  llvm::MapVector<BlockArgument, int64_t> params;
  llvm::SetVector<Value> shardedValues;
  llvm::SetVector<MatmulOp> columnGemms, rowGemms;
  SmallVector<AttentionOp> attentions;
  /// The vocabulary-parallel embedding (its result summed over the ranks)
  /// and loss.
  SmallVector<EmbeddingOp> embeddings;
  SmallVector<CrossEntropyOp> losses;
  /// Vocabulary tables kept whole on every rank (the size does not divide
  /// them).
  llvm::SmallPtrSet<Value, 2> wholeTables;
};

class Sharder {
public:
  Sharder(func::FuncOp fn, int64_t size, int64_t block, bool sequenceParallel)
      : fn(fn), size(size), block(block), sequenceParallel(sequenceParallel) {}

  LogicalResult plan() {
    WalkResult r = fn.walk([&](Operation *op) {
      if (auto a = dyn_cast<AttentionOp>(op)) {
        if (failed(attention(a)))
          return WalkResult::interrupt();
      } else if (auto e = dyn_cast<EmbeddingOp>(op)) {
        if (failed(embedding(e)))
          return WalkResult::interrupt();
      } else if (auto l = dyn_cast<CrossEntropyOp>(op)) {
        if (failed(loss(l)))
          return WalkResult::interrupt();
      } else if (auto s = dyn_cast<SwigluOp>(op)) {
        if (failed(column(s.getGate(), s, "gate")) ||
            failed(column(s.getUp(), s, "up")) ||
            failed(rows(s.getResult(), s)))
          return WalkResult::interrupt();
        p.shardedValues.insert(s.getResult());
      }
      return WalkResult::advance();
    });
    return failure(r.wasInterrupted());
  }

  void rewrite();

private:
  /// A parameter argument read by `user` alone, or null.
  BlockArgument soleParam(Value v, Operation *user) {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg ||
        !fn.getArgAttr(arg.getArgNumber(), Infir2Dialect::getParamAttrName()))
      return nullptr;
    return arg.hasOneUse() && *arg.getUsers().begin() == user ? arg : nullptr;
  }

  StringRef nameOf(BlockArgument arg) {
    return fn
        .getArgAttrOfType<ParamAttr>(arg.getArgNumber(),
                                     Infir2Dialect::getParamAttrName())
        .getName();
  }

  /// Splits `arg`'s dimension `dim` over the ranks, if it divides into
  /// whole FP8 blocks.
  LogicalResult shardParam(BlockArgument arg, int64_t dim, Operation *at,
                           bool fp8 = true) {
    int64_t n = tensorOf(arg).getDimSize(dim);
    bool twoD = fp8 && tensorOf(arg).getRank() == 2;
    if (n % size == 0 && (!twoD || block == 0 || (n / size) % block == 0)) {
      p.params[arg] = dim;
      return success();
    }
    SmallVector<int64_t> work;
    for (int64_t s = 2; s <= n && work.size() < 6; ++s)
      if (n % s == 0 && (!twoD || block == 0 || (n / s) % block == 0))
        work.push_back(s);
    InFlightDiagnostic d = at->emitOpError()
                           << "cannot split dimension " << dim << " (" << n
                           << ") of '" << nameOf(arg) << "' over " << size
                           << " ranks: ";
    if (n % size)
      d << "it does not divide";
    else
      d << "each rank's " << n / size << " would not be whole " << block
        << "-wide FP8 blocks, so the scales would differ from "
           "the unsharded run's (fp8-block=0 lifts this for the "
           "bf16 recipe)";
    d << "; sizes that work: ";
    if (work.empty())
      d << "none but 1";
    else
      llvm::interleaveComma(work, d);
    return failure();
  }

  /// The GEMM (with its bias add and rotary embedding) that makes `v`, the
  /// `what` operand of `consumer`, made column-parallel.
  LogicalResult column(Value v, Operation *consumer, StringRef what) {
    Operation *user = consumer;
    while (true) {
      if (!v.hasOneUse())
        return consumer->emitOpError()
               << "cannot shard its " << what
               << " operand: a value on its way from the projection is "
                  "also read elsewhere, which needs it whole";
      p.shardedValues.insert(v);
      Operation *def = v.getDefiningOp();
      if (auto rope = dyn_cast_or_null<RopeOp>(def)) {
        user = rope;
        v = rope.getInput();
        continue;
      }
      if (auto add = dyn_cast_or_null<AddOp>(def)) {
        BlockArgument bias = soleParam(add.getRhs(), add);
        if (!bias || tensorOf(bias).getRank() != 1)
          break;
        if (failed(shardParam(bias, 0, add)))
          return failure();
        user = add;
        v = add.getLhs();
        continue;
      }
      auto gemm = dyn_cast_or_null<MatmulOp>(def);
      BlockArgument w = gemm ? soleParam(gemm.getRhs(), gemm) : nullptr;
      if (!gemm || !gemm.getTransposeRhs() || !w || tensorOf(w).getRank() != 2)
        break;
      if (failed(shardParam(w, 0, gemm)))
        return failure();
      p.columnGemms.insert(gemm);
      return success();
    }
    return consumer->emitOpError()
           << "cannot shard its " << what
           << " operand: it is not made by a GEMM of a weight parameter "
              "(with transpose_rhs), an optional bias add and rotary "
              "embedding, each read once";
  }

  /// The GEMMs that read `v`, the sharded output of `producer`, made
  /// row-parallel.
  LogicalResult rows(Value v, Operation *producer) {
    for (Operation *user : v.getUsers()) {
      auto gemm = dyn_cast<MatmulOp>(user);
      BlockArgument w = gemm ? soleParam(gemm.getRhs(), gemm) : nullptr;
      if (!gemm || gemm.getLhs() != v || !gemm.getTransposeRhs() || !w ||
          tensorOf(w).getRank() != 2)
        return producer->emitOpError()
               << "cannot shard its result: '" << user->getName()
               << "' reads it, where only GEMMs of a weight parameter (the "
                  "output or down projection) may";
      if (failed(shardParam(w, 1, gemm)))
        return failure();
      p.rowGemms.insert(gemm);
    }
    return success();
  }

  /// A vocabulary table: an embedding's, or the LM head's (tied or not),
  /// read by embeddings and LM-head GEMMs only, split by rows. Both stay in
  /// high precision in the recipe, so no FP8 block rule applies. A
  /// vocabulary the size does not divide stays whole on every rank (set in
  /// `whole`), as the layers saw it before they were split, unless the
  /// sequence is split too (the residual stream would then need a scatter
  /// after the embedding and a gather before the head).
  LogicalResult vocabTable(BlockArgument table, Operation *at, bool &whole) {
    whole = p.wholeTables.contains(table);
    if (whole || p.params.count(table))
      return success();
    int64_t rows = tensorOf(table).getDimSize(0);
    if (rows % size != 0 && !sequenceParallel) {
      at->emitRemark() << "the vocabulary of '" << nameOf(table) << "' ("
                       << rows << ") does not divide over " << size
                       << " ranks: it stays whole on every rank (each computes "
                          "every logit; a vocabulary padded to a multiple of "
                       << size << " would be split)";
      p.wholeTables.insert(table);
      whole = true;
      return success();
    }
    for (Operation *user : table.getUsers()) {
      auto head = dyn_cast<MatmulOp>(user);
      if (isa<EmbeddingOp>(user) ||
          (head && head.getRhs() == table && head.getTransposeRhs() &&
           head.getLhs() != table &&
           llvm::any_of(head->getUsers(),
                        [](auto *u) { return isa<CrossEntropyOp>(u); })))
        continue;
      return at->emitOpError()
             << "cannot split the vocabulary of '" << nameOf(table) << "': '"
             << user->getName()
             << "' reads it, where only embeddings and an LM head (a GEMM "
                "whose logits feed the loss) may";
    }
    if (succeeded(shardParam(table, 0, at, /*fp8=*/false)))
      return success();
    at->emitRemark() << "without sequence parallelism a vocabulary that does "
                        "not divide stays whole on every rank";
    return failure();
  }

  /// The embedding's table split by rows (ids outside a rank's rows give
  /// zero rows), its result summed over the ranks.
  LogicalResult embedding(EmbeddingOp e) {
    auto table = dyn_cast<BlockArgument>(e.getTable());
    if (!table ||
        !fn.getArgAttr(table.getArgNumber(), Infir2Dialect::getParamAttrName()))
      return e.emitOpError() << "cannot split its vocabulary: the table is "
                                "not a parameter";
    bool whole;
    if (failed(vocabTable(table, e, whole)))
      return failure();
    if (!whole)
      p.embeddings.push_back(e);
    return success();
  }

  /// The LM head made column-parallel over the vocabulary, and the loss
  /// computed from the ranks' columns of the logits.
  LogicalResult loss(CrossEntropyOp l) {
    Value logits = l.getLogits();
    auto head = logits.getDefiningOp<MatmulOp>();
    auto table = head ? dyn_cast<BlockArgument>(head.getRhs()) : nullptr;
    if (!head || !head.getTransposeRhs() || !table || !logits.hasOneUse() ||
        !fn.getArgAttr(table.getArgNumber(), Infir2Dialect::getParamAttrName()))
      return l.emitOpError()
             << "cannot split its vocabulary: the logits are not made by a "
                "GEMM of a weight parameter (with transpose_rhs) read by the "
                "loss alone";
    bool whole;
    if (failed(vocabTable(table, l, whole)))
      return failure();
    if (whole) // replicated: the head reads the replicated hidden states
      return success();
    p.columnGemms.insert(head);
    p.shardedValues.insert(logits);
    p.losses.push_back(l);
    return success();
  }

  LogicalResult attention(AttentionOp a) {
    for (auto [what, n] : {std::pair{"query heads", a.getNumHeads()},
                           std::pair{"key/value heads", a.getNumKvHeads()}})
      if (int64_t(n) % size)
        return a.emitOpError()
               << "cannot split its " << n << " " << what << " over " << size
               << " ranks (a grouped-query group stays whole on one rank)";
    if (failed(column(a.getQuery(), a, "query")) ||
        failed(column(a.getKey(), a, "key")) ||
        failed(column(a.getValue(), a, "value")) ||
        failed(rows(a.getResult(), a)))
      return failure();
    p.attentions.push_back(a);
    p.shardedValues.insert(a.getResult());
    return success();
  }

  func::FuncOp fn;
  int64_t size, block;
  bool sequenceParallel;
  Plan p;
};

void Sharder::rewrite() {
  MLIRContext *ctx = fn.getContext();
  Builder attrs(ctx);
  IntegerAttr sizeAttr = attrs.getI64IntegerAttr(size);
  for (auto [arg, dim] : p.params) {
    arg.setType(divided(arg, dim, size));
    fn.setArgAttr(arg.getArgNumber(), Infir2Dialect::getTPShardAttrName(),
                  attrs.getI64IntegerAttr(dim));
  }
  for (Value v : p.shardedValues)
    v.setType(divided(v, tensorOf(v).getRank() - 1, size));
  for (AttentionOp a : p.attentions) {
    a.setNumHeads(a.getNumHeads() / size);
    a.setNumKvHeads(a.getNumKvHeads() / size);
  }
  for (CrossEntropyOp l : p.losses)
    l.setVocabShards(size);
  for (EmbeddingOp e : p.embeddings) {
    e.setVocabShards(size);
    OpBuilder b(ctx);
    b.setInsertionPointAfter(e);
    auto sum =
        TPReduceOp::create(b, e.getLoc(), e.getType(), e.getResult(), sizeAttr);
    e.getResult().replaceAllUsesExcept(sum, sum);
  }
  // One tp_copy per input that enters, after it is made.
  llvm::DenseMap<Value, Value> entered;
  for (MatmulOp gemm : p.columnGemms) {
    Value x = gemm.getLhs();
    Value &copy = entered[x];
    if (!copy) {
      OpBuilder b(ctx);
      b.setInsertionPointAfterValue(x);
      copy = TPCopyOp::create(b, x.getLoc(), x.getType(), x, sizeAttr);
    }
    gemm.getLhsMutable().assign(copy);
  }
  for (MatmulOp gemm : p.rowGemms) {
    OpBuilder b(gemm->getContext());
    b.setInsertionPointAfter(gemm);
    auto sum = TPReduceOp::create(b, gemm.getLoc(), gemm.getType(),
                                  gemm.getResult(), sizeAttr);
    gemm.getResult().replaceAllUsesExcept(sum, sum);
  }
  fn.setFunctionType(FunctionType::get(
      ctx, fn.getBody().front().getArgumentTypes(), fn.getResultTypes()));
}

struct TensorParallelPass
    : public infir2::impl::TensorParallelPassBase<TensorParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (size < 1 || fp8Block < 0) {
      module.emitError() << "--infir2-tensor-parallel: size must be at least "
                            "1 and fp8-block at least 0";
      return signalPassFailure();
    }
    if (size == 1) {
      if (sequenceParallel) {
        module.emitError() << "--infir2-tensor-parallel: sequence-parallel "
                              "splits the sequence over a group of 2 or more "
                              "ranks (size=1)";
        return signalPassFailure();
      }
      return;
    }
    if (module->hasAttr(Infir2Dialect::getTensorParallelAttrName())) {
      module.emitError() << "the module is already tensor-parallel";
      return signalPassFailure();
    }
    auto fn = module.lookupSymbol<func::FuncOp>(forwardName);
    if (!fn || fn.isExternal()) {
      module.emitError() << "no function named '" << forwardName
                         << "' to shard";
      return signalPassFailure();
    }
    if (module.lookupSymbol("train_step")) {
      module.emitError() << "--infir2-tensor-parallel shards the forward "
                            "before --infir2-autodiff derives the step";
      return signalPassFailure();
    }
    Sharder sharder(fn, size, fp8Block, sequenceParallel);
    if (failed(sharder.plan()))
      return signalPassFailure();
    sharder.rewrite();
    if (sequenceParallel && failed(splitSequence(fn, size)))
      return signalPassFailure();
    module->setAttr(Infir2Dialect::getTensorParallelAttrName(),
                    Builder(module).getI64IntegerAttr(size));
    if (failed(verifyTensorParallel(fn, size)))
      signalPassFailure();
  }
};

} // namespace
