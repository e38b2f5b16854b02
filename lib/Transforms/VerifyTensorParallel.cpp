//===- VerifyTensorParallel.cpp - Shards meet only through collectives ----===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Follows every value of one rank's forward from its arguments and says how
// the ranks of the tensor-parallel group hold it; an op that would combine
// a shard or a partial sum with a whole tensor, without the collective
// between them, is an error.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "llvm/ADT/TypeSwitch.h"

namespace infir2 {
#define GEN_PASS_DEF_VERIFYTENSORPARALLELPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

/// How the ranks hold a value.
enum class Layout {
  Whole,    ///< every rank holds the same whole tensor
  Entered,  ///< whole, read through infir2.tp_copy (gradient summed)
  Shard,    ///< each rank its slice of the last dimension (or a parameter's
            ///< `infir2.tp_shard` dimension)
  Partial,  ///< each rank a partial sum of the whole tensor
  Sequence, ///< each rank its slice of the sequence (sequence parallelism)
};

StringRef describe(Layout l) {
  switch (l) {
  case Layout::Whole:
    return "a whole tensor";
  case Layout::Entered:
    return "a whole tensor entered through 'infir2.tp_copy'";
  case Layout::Shard:
    return "a shard";
  case Layout::Partial:
    return "a partial sum";
  case Layout::Sequence:
    return "a slice of the sequence";
  }
  llvm_unreachable("layout");
}

bool isWhole(Layout l) { return l == Layout::Whole; }

RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

class Checker {
public:
  Checker(func::FuncOp fn, int64_t size) : fn(fn), size(size) {}

  LogicalResult run() {
    Block &body = fn.getBody().front();
    for (BlockArgument arg : body.getArguments()) {
      auto dim = fn.getArgAttrOfType<IntegerAttr>(
          arg.getArgNumber(), Infir2Dialect::getTPShardAttrName());
      layouts[arg] = dim ? Layout::Shard : Layout::Whole;
      if (dim)
        shardDims[arg] = dim.getInt();
    }
    for (Operation &op : body)
      if (failed(visit(op)))
        return failure();
    return success();
  }

private:
  Layout of(Value v) { return layouts.lookup(v); }

  InFlightDiagnostic error(Operation &op, unsigned operand, Layout got) {
    return op.emitOpError()
           << "operand #" << operand << " is " << describe(got) << ": ";
  }

  /// An entered value read by anything but a column-parallel GEMM.
  LogicalResult enteredError(Operation &op, unsigned operand) {
    return error(op, operand, Layout::Entered)
           << "only column-parallel GEMMs and, with sequence parallelism, "
              "norms' weights read it (its gradient is summed over the "
              "ranks: another reader's would be counted "
           << size << " times)";
  }

  /// Every float operand in one layout: all whole (results whole) or all
  /// shards (results shards). Integer operands (ids, positions, segments)
  /// are whole and do not count.
  LogicalResult elementwise(Operation &op) {
    std::optional<Layout> common;
    for (OpOperand &use : op.getOpOperands()) {
      auto type = cast<ShapedType>(use.get().getType());
      if (!isa<FloatType>(type.getElementType()))
        continue;
      Layout l = of(use.get());
      if (l == Layout::Entered)
        return enteredError(op, use.getOperandNumber());
      if (l == Layout::Partial)
        return error(op, use.getOperandNumber(), l)
               << "a partial sum must be summed by 'infir2.tp_reduce' first";
      if (l == Layout::Sequence && !isa<AddOp, MulOp, ConvertOp>(op))
        return error(op, use.getOperandNumber(), l)
               << "'" << op.getName()
               << "' needs the whole sequence (put it together with "
                  "'infir2.tp_all_gather' first)";
      if (common && *common != l)
        return error(op, use.getOperandNumber(), l)
               << "the op mixes " << describe(*common) << " and "
               << describe(l);
      common = l;
    }
    for (Value r : op.getResults())
      layouts[r] = common.value_or(Layout::Whole);
    return success();
  }

  /// Ops that run on whole tensors only.
  LogicalResult wholeOnly(Operation &op) {
    for (OpOperand &use : op.getOpOperands())
      if (Layout l = of(use.get()); l == Layout::Entered)
        return enteredError(op, use.getOperandNumber());
      else if (!isWhole(l))
        return error(op, use.getOperandNumber(), l)
               << "'" << op.getName()
               << "' runs on whole tensors (insert the collective that "
                  "makes it whole)";
    for (Value r : op.getResults())
      layouts[r] = Layout::Whole;
    return success();
  }

  LogicalResult matmul(MatmulOp op) {
    Layout a = of(op.getLhs()), b = of(op.getRhs());
    // The rhs's dimension that holds the output features: 0 when it is
    // transposed ([N, K]), 1 otherwise ([K, N]).
    int64_t outDim = op.getTransposeRhs() ? 0 : 1;
    if (a == Layout::Partial || b == Layout::Partial)
      return error(*op, a == Layout::Partial ? 0 : 1, Layout::Partial)
             << "a partial sum must be summed by 'infir2.tp_reduce' first";
    if (a == Layout::Sequence || b == Layout::Sequence)
      return error(*op, a == Layout::Sequence ? 0 : 1, Layout::Sequence)
             << "a GEMM reads a slice of the sequence only once "
                "'infir2.tp_all_gather' has put it together";
    bool column = b == Layout::Shard && shardDims.count(op.getRhs()) &&
                  shardDims.lookup(op.getRhs()) == outDim;
    if (a == Layout::Entered && !column)
      return enteredError(*op, 0);
    if (b == Layout::Entered)
      return enteredError(*op, 1);
    if (isWhole(a) && isWhole(b)) {
      layouts[op.getResult()] = Layout::Whole;
      return success();
    }
    if (b == Layout::Shard && !shardDims.count(op.getRhs()))
      return error(*op, 1, b) << "a GEMM's sharded right-hand side must be a "
                                 "parameter with 'infir2.tp_shard'";
    if (b == Layout::Shard && shardDims.lookup(op.getRhs()) == outDim) {
      if (a != Layout::Entered)
        return error(*op, 0, a)
               << "a column-parallel GEMM reads its input through "
                  "'infir2.tp_copy', so that the input's gradient is summed "
                  "over the ranks";
      layouts[op.getResult()] = Layout::Shard;
      return success();
    }
    if (b == Layout::Shard && a == Layout::Shard) {
      layouts[op.getResult()] = Layout::Partial;
      return success();
    }
    return error(*op, a == Layout::Shard ? 0 : 1, Layout::Shard)
           << "a GEMM takes a shard on the left only with a weight sharded "
              "along the contraction (row-parallel), and a shard on the "
              "right only along its output features (column-parallel)";
  }

  /// An op over the vocabulary (an embedding, a loss): whole, or with
  /// `vocab_shards` equal to the group's size on a shard of `input` split
  /// along `dim`, every other operand whole; the result is `result`.
  LogicalResult vocabulary(Operation &op, Value input, int64_t shards,
                           int64_t dim, Layout result) {
    if (shards == 1)
      return wholeOnly(op);
    if (shards != size)
      return op.emitOpError()
             << "splits the vocabulary over " << shards
             << " ranks in a module of tensor-parallel size " << size;
    Layout l = of(input);
    // A parameter's split is its tp_shard dimension (the embedding's table
    // must be one); any other shard's is its last (the logits).
    bool rowsOrColumns =
        shardDims.count(input)
            ? shardDims.lookup(input) == dim
            : !isa<EmbeddingOp>(op) && dim == tensorOf(input).getRank() - 1;
    if (l != Layout::Shard || !rowsOrColumns)
      return error(op, 0, l) << "with vocab_shards, each rank holds its "
                                "slice of the vocabulary (dimension "
                             << dim << ")";
    for (OpOperand &use : op.getOpOperands())
      if (use.get() != input && !isWhole(of(use.get())))
        return error(op, use.getOperandNumber(), of(use.get()))
               << "only the vocabulary is split; ids, targets, masks and "
                  "divisors are whole";
    layouts[op.getResult(0)] = result;
    return success();
  }

  LogicalResult visit(Operation &op) {
    return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
        .Case([&](TPCopyOp o) -> LogicalResult {
          if (Layout l = of(o.getInput()); !isWhole(l))
            return error(op, 0, l) << "only a whole tensor enters a "
                                      "tensor-parallel region";
          layouts[o.getResult()] = Layout::Entered;
          return success();
        })
        .Case<TPReduceScatterOp, TPAllGatherOp>([&](auto o) -> LogicalResult {
          if (o.getDim() != 1)
            return op.emitOpError()
                   << "splits dimension " << o.getDim()
                   << ": sequence parallelism splits dimension 1 ([batch, "
                      "seq, hidden])";
          bool scatter = isa<TPReduceScatterOp>(op);
          Layout l = of(o.getInput());
          if (scatter && l != Layout::Partial)
            return error(op, 0, l)
                   << "'infir2.tp_reduce_scatter' sums partial sums";
          if (!scatter && l != Layout::Sequence)
            return error(op, 0, l) << "'infir2.tp_all_gather' puts slices "
                                      "of the sequence together";
          layouts[o.getResult()] = scatter ? Layout::Sequence : Layout::Entered;
          return success();
        })
        .Case([&](RMSNormOp o) -> LogicalResult {
          // On a slice of the sequence, the weight enters (its gradient is
          // summed over the slices).
          if (of(o.getInput()) == Layout::Sequence) {
            if (Layout l = of(o.getWeight()); l != Layout::Entered)
              return error(op, 1, l)
                     << "a norm on a slice of the sequence reads its weight "
                        "through 'infir2.tp_copy', so that the weight's "
                        "gradient is summed over the slices";
            layouts[o.getResult()] = Layout::Sequence;
            return success();
          }
          return wholeOnly(op);
        })
        .Case<ConvertOp>([&](Operation *) { return elementwise(op); })
        .Case([&](TPReduceOp o) -> LogicalResult {
          if (Layout l = of(o.getInput()); l != Layout::Partial)
            return error(op, 0, l)
                   << "'infir2.tp_reduce' sums partial sums (of a whole "
                      "tensor it would make "
                   << o.getSize() << " times the value)";
          layouts[o.getResult()] = Layout::Whole;
          return success();
        })
        .Case([&](MatmulOp o) { return matmul(o); })
        .Case([&](EmbeddingOp o) {
          return vocabulary(op, o.getTable(), int64_t(o.getVocabShards()), 0,
                            Layout::Partial);
        })
        .Case([&](CrossEntropyOp o) {
          return vocabulary(op, o.getLogits(), int64_t(o.getVocabShards()),
                            tensorOf(o.getLogits()).getRank() - 1,
                            Layout::Whole);
        })
        .Case<AddOp, MulOp, RopeOp, AttentionOp, SwigluOp, SiluOp>(
            [&](Operation *) { return elementwise(op); })
        .Default([&](Operation *) { return wholeOnly(op); });
  }

  func::FuncOp fn;
  int64_t size;
  llvm::DenseMap<Value, Layout> layouts;
  llvm::DenseMap<Value, int64_t> shardDims;
};

struct VerifyTensorParallelPass
    : public infir2::impl::VerifyTensorParallelPassBase<
          VerifyTensorParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto size = module->getAttrOfType<IntegerAttr>(
        Infir2Dialect::getTensorParallelAttrName());
    auto fn = module.lookupSymbol<func::FuncOp>(forwardName);
    if (!size || !fn || fn.isExternal())
      return;
    if (failed(verifyTensorParallel(fn, size.getInt())))
      signalPassFailure();
  }
};

} // namespace

LogicalResult infir2::verifyTensorParallel(func::FuncOp fn, int64_t size) {
  for (Operation &op : fn.getBody().front()) {
    int64_t over =
        llvm::TypeSwitch<Operation *, int64_t>(&op)
            .Case<TPCopyOp, TPReduceOp, TPAllGatherOp, TPReduceScatterOp>(
                [](auto o) { return int64_t(o.getSize()); })
            .Default(size);
    if (over != size)
      return op.emitOpError()
             << "is over " << over
             << " ranks in a module of tensor-parallel size " << size;
  }
  return Checker(fn, size).run();
}
