//===- GroupCalls.cpp - Ops the runtime runs as one call, side by side ----===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/Transforms/MemoryPlan.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

namespace infir2 {
#define GEN_PASS_DEF_GROUPCALLSPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

/// Whether every operand of `op` is made in `block` before `at` (or is
/// `at`'s result, or one of `block`'s arguments).
bool readyAt(Operation *op, Operation *at, Block &block) {
  return llvm::all_of(op->getOperands(), [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return cast<BlockArgument>(v).getOwner() == &block;
    return def->getBlock() == &block && (def == at || def->isBeforeInBlock(at));
  });
}

/// Moves each groupable op of `block` up to just after the last op of its
/// kind, when it is ready there.
void groupBlock(Block &block) {
  // The last op of each kind, in program order after the moves.
  llvm::DenseMap<OperationName, Operation *> last;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (!isa<fp8::QuantizeDualOp, ReduceSumOp>(op))
      continue;
    Operation *&previous = last[op.getName()];
    if (previous && previous->getNextNode() != &op &&
        runsAsOneCall(previous, &op) && readyAt(&op, previous, block))
      op.moveAfter(previous);
    previous = &op;
  }
}

struct GroupCallsPass : infir2::impl::GroupCallsPassBase<GroupCallsPass> {
  void runOnOperation() override {
    getOperation().walk([](FunctionOpInterface fn) {
      if (!fn.isExternal())
        groupBlock(fn.getFunctionBody().front());
    });
  }
};

} // namespace
