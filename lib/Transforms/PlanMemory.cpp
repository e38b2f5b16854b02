//===- PlanMemory.cpp - Places every tensor of the training step ----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Runs the memory planner (MemoryPlan.h) and writes its decisions into the
// IR, where a reader sees them and --infir2-lower-to-runtime takes them:
// the module's #infir2rt.plan (state slots, sizes, batch geometry), each
// planned function's exported symbol and arena size, each argument's and
// result's #infir2rt.buffer, and the state slot each returned value is
// copied to.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/MemoryPlan.h"
#include "infir2/Transforms/Passes.h"

#include "infir2/Dialect/Runtime/IR/RuntimeAttrs.h"
#include "infir2/Dialect/Runtime/IR/RuntimeDialect.h"

#include "llvm/Support/raw_ostream.h"

namespace infir2 {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

struct PlanMemoryPass
    : public infir2::impl::PlanMemoryPassBase<PlanMemoryPass> {
  using Base::Base;
  void runOnOperation() override;
};

rtir::BufferAttr bufferAttr(MLIRContext *ctx, Buffer b, Type type) {
  return rtir::BufferAttr::get(
      ctx, b.scratch ? rtir::Region::scratch : rtir::Region::state, b.offset,
      cast<RankedTensorType>(type));
}

/// Writes `f`'s placements onto its function.
void annotate(const FunctionPlan &f, const ModelPlan &plan) {
  func::FuncOp fn = f.fn;
  MLIRContext *ctx = fn.getContext();
  Builder b(ctx);
  fn->setAttr(rtir::RuntimeDialect::getSymbolAttrName(),
              b.getStringAttr(f.symbol));
  fn->setAttr(rtir::RuntimeDialect::getScratchBytesAttrName(),
              b.getI64IntegerAttr(f.scratchBytes));
  for (BlockArgument arg : fn.getArguments())
    fn.setArgAttr(arg.getArgNumber(), rtir::RuntimeDialect::getBufferAttrName(),
                  bufferAttr(ctx, f.buffers.lookup(arg), arg.getType()));
  fn.walk([&](Operation *op) {
    if (op->getNumResults() == 0 || op == fn)
      return;
    SmallVector<Attribute> buffers;
    for (Value r : op->getResults())
      buffers.push_back(bufferAttr(ctx, f.buffers.lookup(r), r.getType()));
    op->setAttr(rtir::RuntimeDialect::getBuffersAttrName(),
                b.getArrayAttr(buffers));
  });
  SmallVector<Attribute> copyOut;
  for (auto [value, slot] : f.copyOut) {
    const StateSlot &s = plan.state[slot];
    copyOut.push_back(bufferAttr(ctx, {false, s.offset}, s.type));
  }
  fn.getBody().front().getTerminator()->setAttr(
      rtir::RuntimeDialect::getCopyOutAttrName(), b.getArrayAttr(copyOut));
}

void PlanMemoryPass::runOnOperation() {
  ModuleOp module = getOperation();
  FailureOr<ModelPlan> plan = planModel(module);
  if (failed(plan))
    return signalPassFailure();
  if (report)
    printMemoryReport(*plan, llvm::outs());

  MLIRContext *ctx = &getContext();
  SmallVector<Attribute> slots;
  for (const StateSlot &s : plan->state)
    slots.push_back(rtir::SlotAttr::get(
        ctx, *rtir::symbolizeSlotKind(s.kind), s.name, s.offset, s.type,
        s.init));
  module->setAttr(rtir::RuntimeDialect::getPlanAttrName(),
                  rtir::PlanAttr::get(ctx, plan->stateBytes, plan->scratchBytes,
                                      plan->batch, plan->seqLen, plan->vocab,
                                      plan->zero1WorldSize,
                                      ArrayAttr::get(ctx, slots)));
  for (const FunctionPlan &f : plan->functions)
    annotate(f, *plan);
}

} // namespace
