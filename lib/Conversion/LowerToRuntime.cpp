//===- LowerToRuntime.cpp - Planned steps as infir2rt calls ---------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Each planned step becomes a function of infir2rt.call ops: one per op of
// its schedule (a reshape is a view and has none; a fused producer and its
// quantization share one; runs of independent quantize_dual and in-place
// all_reduce ops share one, CallBatching.h), then one copy per result into
// its state slot. Buffers are the placements --infir2-plan-memory
// wrote into the IR.
//
//===----------------------------------------------------------------------===//

#include "infir2/Conversion/Passes.h"
#include "infir2/Conversion/RuntimeCallModels.h"

#include "CallBatching.h"
#include "Manifest.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/Dialect/Runtime/IR/RuntimeInterfaces.h"
#include "infir2/Dialect/Runtime/IR/RuntimeOps.h"
#include "infir2/Transforms/MemoryPlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

namespace infir2 {
#define GEN_PASS_DEF_LOWERTORUNTIMEPASS
#include "infir2/Conversion/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

/// "infir2.rms_norm at model.mlir:12:5"
std::string describe(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << op->getName() << " at ";
  if (auto file = dyn_cast<FileLineColLoc>(op->getLoc()))
    os << file.getFilename().getValue() << ":" << file.getLine() << ":"
       << file.getColumn();
  else
    op->getLoc().print(os);
  return s;
}

/// Where --infir2-plan-memory placed `v`.
FailureOr<rtir::BufferAttr> bufferOf(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    Operation *owner = arg.getOwner()->getParentOp();
    auto fn = dyn_cast<func::FuncOp>(owner);
    if (!fn)
      return owner->emitOpError()
             << "has a region argument the runtime calls cannot read";
    if (auto b = fn.getArgAttrOfType<rtir::BufferAttr>(
            arg.getArgNumber(), rtir::RuntimeDialect::getBufferAttrName()))
      return b;
    return fn.emitOpError() << "has no buffer for argument #"
                            << arg.getArgNumber()
                            << " (run --infir2-plan-memory first)";
  }
  Operation *op = v.getDefiningOp();
  auto buffers = op->getAttrOfType<ArrayAttr>(
      rtir::RuntimeDialect::getBuffersAttrName());
  if (!buffers)
    return op->emitOpError()
           << "has no buffers (run --infir2-plan-memory first)";
  return cast<rtir::BufferAttr>(
      buffers[cast<OpResult>(v).getResultNumber()]);
}

/// "result moment1 model.norm.weight": the state slot at `dst`.
std::string describeSlot(rtir::PlanAttr plan, rtir::BufferAttr dst) {
  for (auto slot : plan.getSlots().getAsRange<rtir::SlotAttr>())
    if (slot.getOffset() == dst.getOffset() && slot.getType() == dst.getType())
      return ("result " + rtir::stringifySlotKind(slot.getKind()) + " " +
              slot.getName())
          .str();
  return "result";
}

/// The planned function `fn` as a function of runtime calls, added at the
/// end of the module. Its schedule is the planner's (scheduleBlock, shared
/// with MemoryPlan.cpp), so the calls run in the order the arena was planned
/// for.
LogicalResult lowerFunction(func::FuncOp fn, StringRef symbol,
                            rtir::PlanAttr plan) {
  MLIRContext *ctx = fn.getContext();
  auto scratchBytes = fn->getAttrOfType<IntegerAttr>(
      rtir::RuntimeDialect::getScratchBytesAttrName());
  if (!scratchBytes || !llvm::hasSingleElement(fn.getBody()))
    return fn.emitOpError()
           << "is not a planned step: it needs a body of one block and '"
           << rtir::RuntimeDialect::getScratchBytesAttrName()
           << "' (run --infir2-plan-memory first)";
  // Every buffer lies inside its region: the state, or this step's arena.
  auto checkBounds = [&](Operation *at, rtir::BufferAttr b) -> LogicalResult {
    bool scratch = b.getRegion() == rtir::Region::scratch;
    int64_t size = scratch ? scratchBytes.getInt() : plan.getStateBytes();
    if (b.getOffset() + storedBytes(b.getType()) <= size)
      return success();
    return at->emitOpError() << "has " << b << ", which ends past the "
                             << (scratch ? "step's arena" : "state region")
                             << " (" << size << " bytes)";
  };
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(fn->getParentOfType<ModuleOp>().getBody());
  auto out = func::FuncOp::create(b, fn.getLoc(), symbol,
                                  b.getFunctionType({}, {}));
  OpBuilder body = OpBuilder::atBlockEnd(out.addEntryBlock());
  SmallVector<Operation *> schedule;
  DenseMap<Value, View> alias;
  scheduleBlock(fn.getBody().front(), schedule, alias);
  std::vector<LoweredCall> calls;
  for (size_t i = 0; i < schedule.size(); ++i) {
    Operation *op = schedule[i];
    auto callee = dyn_cast<rtir::RuntimeCallOpInterface>(op);
    if (!callee)
      return op->emitOpError() << "has no runtime entry point to lower to";
    FailureOr<rtir::RuntimeCall> call = callee.getRuntimeCall();
    if (failed(call))
      return failure();
    if (call->isView())
      continue;
    // A producer and its quantization: one call, one kernel on a GPU.
    Operation *next = i + 1 < schedule.size() ? schedule[i + 1] : nullptr;
    if (std::optional<rtir::RuntimeCall> fused =
            next ? callee.getFusedRuntimeCall(next) : std::nullopt) {
      *call = std::move(*fused);
      ++i;
    }
    LoweredCall lowered{
        call->entry,
        {},
        SmallVector<double>(call->attrs.begin(), call->attrs.end()),
        op->getLoc(),
        describe(op)};
    for (Value v : call->operands) {
      FailureOr<rtir::BufferAttr> buffer = bufferOf(v);
      if (failed(buffer) || failed(checkBounds(op, *buffer)))
        return failure();
      lowered.buffers.push_back(*buffer);
    }
    calls.push_back(std::move(lowered));
  }
  batchCalls(calls);
  for (const LoweredCall &c : calls)
    rtir::CallOp::create(
        body, c.loc, c.entry,
        body.getArrayAttr(SmallVector<Attribute>(c.buffers.begin(),
                                                 c.buffers.end())),
        body.getDenseF64ArrayAttr(c.attrs), c.where);
  // Results to their state slots.
  Operation *ret = fn.getBody().front().getTerminator();
  auto copyOut =
      ret->getAttrOfType<ArrayAttr>(rtir::RuntimeDialect::getCopyOutAttrName());
  if (!copyOut)
    return ret->emitOpError()
           << "has no state slots for the results (run --infir2-plan-memory "
              "first)";
  for (auto [value, dst] : llvm::zip_equal(ret->getOperands(), copyOut)) {
    FailureOr<rtir::BufferAttr> src = bufferOf(value);
    if (failed(src) ||
        failed(checkBounds(ret, cast<rtir::BufferAttr>(dst))))
      return failure();
    if (*src == dst)
      continue;
    rtir::CallOp::create(body, fn.getLoc(), "copy",
                         body.getArrayAttr({*src, dst}),
                         body.getDenseF64ArrayAttr({}),
                         describeSlot(plan, cast<rtir::BufferAttr>(dst)));
  }
  func::ReturnOp::create(body, fn.getLoc());
  return success();
}

struct LowerToRuntimePass
    : public infir2::impl::LowerToRuntimePassBase<LowerToRuntimePass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    LowerToRuntimePassBase::getDependentDialects(registry);
    // The runtime call of each op, in any context this pass runs in.
    registerRuntimeCallModels(registry);
  }
  void runOnOperation() override;
};

void LowerToRuntimePass::runOnOperation() {
  ModuleOp module = getOperation();
  auto plan = module->getAttrOfType<rtir::PlanAttr>(
      rtir::RuntimeDialect::getPlanAttrName());
  if (!plan) {
    module.emitError() << "expects the module's '"
                       << rtir::RuntimeDialect::getPlanAttrName()
                       << "' (run --infir2-plan-memory first)";
    return signalPassFailure();
  }
  SmallVector<func::FuncOp> planned, others;
  for (auto fn : module.getOps<func::FuncOp>())
    (fn->hasAttr(rtir::RuntimeDialect::getSymbolAttrName()) ? planned : others)
        .push_back(fn);
  // The trainer's steps in a fixed order: train, optimizer, eval, decode.
  auto rank = [](func::FuncOp fn) {
    StringRef s = fn->getAttrOfType<StringAttr>(
                        rtir::RuntimeDialect::getSymbolAttrName())
                      .getValue();
    return llvm::find(rtir::RuntimeDialect::getStepSymbols(), s) -
           rtir::RuntimeDialect::getStepSymbols().begin();
  };
  llvm::stable_sort(planned, [&](func::FuncOp a, func::FuncOp b) {
    return rank(a) < rank(b);
  });
  std::vector<rt::ManifestFp8Weight> fp8Weights = fp8WeightsOf(planned);
  uint32_t fp8Gemms = fp8GemmsOf(planned);
  for (func::FuncOp fn : planned)
    if (failed(lowerFunction(
            fn, fn->getAttrOfType<StringAttr>(
                      rtir::RuntimeDialect::getSymbolAttrName()),
            plan)))
      return signalPassFailure();
  auto modelConfig =
      module->getAttrOfType<StringAttr>(Infir2Dialect::getModelConfigAttrName());
  FailureOr<std::string> manifest = buildManifest(
      plan, planned, modelConfig ? modelConfig.getValue() : StringRef(),
      fp8Weights, fp8Gemms);
  if (failed(manifest))
    return signalPassFailure();
  for (func::FuncOp fn : llvm::concat<func::FuncOp>(planned, others))
    fn.erase();
  module->removeAttr(rtir::RuntimeDialect::getPlanAttrName());
  module->removeAttr(Infir2Dialect::getModelConfigAttrName()); // in the manifest
  module->setAttr(rtir::RuntimeDialect::getManifestAttrName(),
                  StringAttr::get(&getContext(), *manifest));
}

} // namespace
