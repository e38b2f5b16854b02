//===- Recompute.cpp - Activations recomputed to fit a memory budget ------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// --infir2-recompute="budget=80GiB": until the planned step (state + arena)
// fits the budget, the forward op whose recomputation frees the most saved
// bytes per predicted second is cloned before its first backward reader,
// which reads the clone; the original's result is then freed after the
// forward pass. A recomputation that does not lower the plan is undone.
// Each clone says why in `infir2.recompute`; when nothing fits, the error
// says what would (StepPasses.td).
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/Transforms/MemoryPlan.h"
#include "infir2/Transforms/StepTime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace infir2 {
#define GEN_PASS_DEF_RECOMPUTEPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

/// "80 GiB", "1.50 GiB", "512.0 MiB".
std::string sizeText(int64_t bytes) {
  double gib = double(bytes) / double(int64_t(1) << 30);
  if (gib >= 1.0)
    return llvm::formatv("{0:F2} GiB", gib).str();
  return llvm::formatv("{0:F1} MiB", double(bytes) / double(1 << 20)).str();
}

/// "80GiB", "512 MiB", "4e9" (bytes), "1.5TB": bytes, or failure.
FailureOr<int64_t> parseSize(StringRef text) {
  text = text.trim();
  size_t end = text.find_first_not_of("0123456789.eE+");
  StringRef number = text.take_front(end),
            unit = text.drop_front(number.size());
  double value;
  // Positive and finite, at most an exbibyte (no int64 overflow below).
  if (number.empty() || number.getAsDouble(value) || !(value > 0) ||
      value > 1e18)
    return failure();
  static const std::pair<StringRef, double> units[] = {
      {"", 1},          {"B", 1},         {"KiB", 1024.0},
      {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1099511627776.0},
      {"KB", 1e3},      {"MB", 1e6},      {"GB", 1e9},
      {"TB", 1e12}};
  for (auto [name, scale] : units)
    if (unit.trim() == name && value * scale <= 1.0e18)
      return int64_t(value * scale);
  return failure();
}

/// What a recomputation of `op` would free and cost.
struct Candidate {
  Operation *op = nullptr;
  int64_t saved = 0; ///< result bytes no longer kept, less operands now kept
  double seconds = 0;
};

class Recomputer {
public:
  Recomputer(func::FuncOp step, const StepTimeTarget &target)
      : body(step.getBody().front()), target(target) {}

  /// The position of every top-level op, and of the first loss (where the
  /// backward pass's readers begin).
  void index() {
    position.clear();
    lossAt = -1;
    for (auto [i, op] : llvm::enumerate(body))
      position[&op] = i;
    for (Operation &op : body)
      if (isa<CrossEntropyOp>(op)) {
        lossAt = position[&op];
        break;
      }
  }

  /// Whether `use` is read by the backward pass (after the loss).
  bool isBackward(OpOperand &use) const {
    Operation *top = body.findAncestorOpInBlock(*use.getOwner());
    return top && position.lookup(top) > lossAt;
  }
  /// Whether the backward pass reads `v`, itself or through a view.
  bool keptAcrossLoss(Value v) const {
    return llvm::any_of(getUsesThroughViews(v),
                        [&](OpOperand *use) { return isBackward(*use); });
  }

  /// The forward ops whose recomputation would free bytes, best first.
  SmallVector<Candidate> candidates() const {
    SmallVector<Candidate> out;
    if (lossAt < 0)
      return out;
    for (Operation &op : body) {
      if (position.lookup(&op) >= lossAt)
        break;
      // An op read in the backward pass alone is not recomputed (it would
      // run twice for nothing): only one whose result the forward reads too.
      if (!recomputable(&op) || rejected.contains(&op) ||
          llvm::none_of(op.getUses(),
                        [&](OpOperand &use) { return !isBackward(use); }))
        continue;
      Candidate c{&op, 0, predictOp(&op, target).seconds};
      // The results the backward pass reads directly (what a clone can
      // stand in for); an operand costs its bytes unless kept anyway.
      for (Value r : op.getResults())
        if (llvm::any_of(r.getUses(),
                         [&](OpOperand &use) { return isBackward(use); }))
          c.saved += storedBytes(cast<RankedTensorType>(r.getType()));
      if (c.saved == 0)
        continue;
      llvm::SmallPtrSet<Value, 4> seen;
      for (Value v : op.getOperands())
        if (isa<OpResult>(v) && seen.insert(v).second && !keptAcrossLoss(v))
          c.saved -= storedBytes(cast<RankedTensorType>(v.getType()));
      if (c.saved > 0)
        out.push_back(c);
    }
    llvm::stable_sort(out, [](const Candidate &a, const Candidate &b) {
      return double(a.saved) / std::max(a.seconds, 1e-12) >
             double(b.saved) / std::max(b.seconds, 1e-12);
    });
    return out;
  }

  /// Clones `c.op` before its first backward reader, which reads the clone
  /// from then on; returns the clone.
  Operation *apply(const Candidate &c, StringRef why) {
    Operation *first = nullptr;
    for (Value r : c.op->getResults())
      for (OpOperand &use : r.getUses())
        if (isBackward(use)) {
          Operation *top = body.findAncestorOpInBlock(*use.getOwner());
          if (!first || top->isBeforeInBlock(first))
            first = top;
        }
    OpBuilder b(first);
    Operation *clone = b.clone(*c.op);
    clone->setAttr(Infir2Dialect::getRecomputeAttrName(), b.getStringAttr(why));
    for (auto [from, to] :
         llvm::zip_equal(c.op->getResults(), clone->getResults()))
      from.replaceUsesWithIf(to, [&](OpOperand &use) {
        return use.getOwner() != clone && isBackward(use);
      });
    return clone;
  }

  /// Undoes `apply`: the backward readers read the original again.
  void undo(Operation *original, Operation *clone) {
    clone->replaceAllUsesWith(original);
    clone->erase();
    rejected.insert(original);
  }

private:
  static bool recomputable(Operation *op) {
    if (auto gemm = dyn_cast<MatmulOp>(op))
      return !gemm.getAcc();
    if (auto gemm = dyn_cast<fp8::ScaledMatmulOp>(op))
      return !gemm.getAcc();
    return isa<RMSNormOp, SwigluOp, SiluOp, RopeOp>(op);
  }

  Block &body;
  const StepTimeTarget &target;
  DenseMap<Operation *, int64_t> position;
  int64_t lossAt = -1;
  llvm::SmallPtrSet<Operation *, 16> rejected;
};

/// Bytes the plan allocates: the state and the largest arena.
int64_t allocatedBytes(const ModelPlan &plan) {
  return plan.stateBytes + plan.scratchBytes;
}

/// The module's tensor-parallel group size (1 without one).
int64_t tensorParallelSize(ModuleOp module) {
  auto size = module->getAttrOfType<IntegerAttr>(
      Infir2Dialect::getTensorParallelAttrName());
  return size ? size.getInt() : 1;
}

/// Why nothing fits, and what would: the state alone, or the activations.
std::string whatWouldFit(const ModelPlan &plan, int64_t budget,
                         int64_t tensorParallel) {
  int64_t optimizer = 0;
  bool bf16Moments = false;
  for (const StateSlot &s : plan.state)
    if (s.kind == "master" || s.kind == "moment1" || s.kind == "moment2") {
      optimizer += alignedBytes(s.bytes);
      bf16Moments |= s.kind != "master" && s.type.getElementType().isBF16();
    }
  // Advice the run has not taken yet.
  std::string halve =
      bf16Moments ? "" : "; optimizer-state=bf16 halves the moments";
  int64_t room = budget - plan.stateBytes;
  std::string out;
  if (room <= 0)
    out =
        "the persistent state alone takes " + sizeText(plan.stateBytes) + ": ";
  else
    out = "the state takes " + sizeText(plan.stateBytes) + ", leaving " +
          sizeText(room) + " for a step that needs " +
          sizeText(plan.scratchBytes) + ": ";
  if (int64_t ranks = plan.zero1WorldSize)
    out += llvm::formatv("its masters and moments ({0}) are sharded over {1} "
                         "ranks already: twice the ranks would save {2} "
                         "more{3}",
                         sizeText(optimizer), ranks, sizeText(optimizer / 2),
                         bf16Moments ? ""
                                     : " (optimizer-state=bf16 halves "
                                       "the moments)")
               .str();
  else
    out += "ZeRO-1 over 8 " +
           std::string(tensorParallel > 1
                           ? "data-parallel groups (zero1=true world-size=8, "
                             "mpirun -np " +
                                 std::to_string(8 * tensorParallel) + ")"
                           : "ranks (zero1=true world-size=8)") +
           " would save " + sizeText(optimizer - optimizer / 8) +
           " (the masters and moments sharded" + halve + ")";
  if (room > 0 && plan.batch * plan.seqLen > 0) {
    int64_t tokens = plan.batch * plan.seqLen;
    int64_t fit =
        int64_t(double(tokens) * double(room) / double(plan.scratchBytes));
    out += llvm::formatv("; or about {0} tokens a micro-batch instead of "
                         "{1}, if the step's memory scales with its tokens",
                         fit, tokens)
               .str();
  }
  return out;
}

struct RecomputePass : public infir2::impl::RecomputePassBase<RecomputePass> {
  using Base::Base;
  void runOnOperation() override {
    if (budget.empty())
      return;
    ModuleOp module = getOperation();
    FailureOr<int64_t> limit = parseSize(budget);
    std::string error;
    FailureOr<StepTimeTarget> rates =
        costTarget == "cpu" ? FailureOr<StepTimeTarget>(failure())
                            : lookUpStepTimeTarget(costTarget, "", error);
    if (failed(limit) || failed(rates)) {
      module.emitError() << "--infir2-recompute: "
                         << (failed(limit)
                                 ? "budget '" + budget +
                                       "' is not a size (e.g. 80GiB, 512MiB, "
                                       "4e9)"
                                 : "cost-target must be h100 or h200, got '" +
                                       costTarget + "'");
      return signalPassFailure();
    }
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    FailureOr<ModelPlan> plan = planModel(module);
    if (!step || failed(plan))
      return signalPassFailure();
    Recomputer recomputer(step, *rates);
    int64_t count = 0;
    double seconds = 0;
    while (allocatedBytes(*plan) > *limit) {
      recomputer.index();
      SmallVector<Candidate> candidates = recomputer.candidates();
      if (candidates.empty()) {
        mlir::emitError(step.getLoc())
            << "--memory-budget " << sizeText(*limit) << ": no plan fits: with "
            << count << " recomputations the step still plans "
            << sizeText(allocatedBytes(*plan)) << "; "
            << whatWouldFit(*plan, *limit, tensorParallelSize(module));
        return signalPassFailure();
      }
      const Candidate &c = candidates.front();
      int64_t before = allocatedBytes(*plan);
      Operation *clone = recomputer.apply(
          c, llvm::formatv("recomputed for the backward pass to fit "
                           "--memory-budget {0}: keeps {1} less across the "
                           "loss for {2:F3} ms ({3})",
                           sizeText(*limit), sizeText(c.saved), c.seconds * 1e3,
                           costTarget)
                 .str());
      plan = planModel(module);
      if (failed(plan))
        return signalPassFailure();
      if (allocatedBytes(*plan) >= before) {
        recomputer.undo(c.op, clone);
        plan = planModel(module);
        if (failed(plan))
          return signalPassFailure();
        continue;
      }
      ++count;
      seconds += c.seconds;
    }
    if (count)
      mlir::emitRemark(step.getLoc())
          << "--memory-budget " << sizeText(*limit) << ": the step plans "
          << sizeText(allocatedBytes(*plan)) << " with " << count
          << " recomputations, " << llvm::formatv("{0:F1}", seconds * 1e3)
          << " ms more a micro-batch on " << costTarget;
  }
};

} // namespace
