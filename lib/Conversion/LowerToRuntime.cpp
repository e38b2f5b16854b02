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

#include "CallBatching.h"
#include "Manifest.h"
#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/Dialect/Runtime/IR/RuntimeOps.h"
#include "infir2/Transforms/MemoryPlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/TypeSwitch.h"

namespace infir2 {
#define GEN_PASS_DEF_LOWERTORUNTIMEPASS
#include "infir2/Conversion/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

/// One runtime call: the entry point, operands (buffers) and attributes.
struct CallSpec {
  std::string entry;
  SmallVector<Value> operands;
  SmallVector<double> attrs;
};

/// Appends the block shape of `granularity` for a tensor of `shape`.
void appendBlock(SmallVectorImpl<double> &attrs,
                 fp8::GranularityAttrInterface granularity, Value v) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
  // The op verifiers have checked that the blocks tile the shape.
  FailureOr<SmallVector<int64_t>> block =
      granularity.getBlockShape(shape, [] { return InFlightDiagnostic(); });
  for (int64_t b : *block)
    attrs.push_back(double(b));
}

/// The runtime call `op` becomes; std::nullopt for ops with no code (a
/// reshape is a view of its input).
FailureOr<std::optional<CallSpec>> callFor(Operation *op) {
  CallSpec c;
  c.operands.append(op->operand_begin(), op->operand_end());
  c.operands.append(op->result_begin(), op->result_end());
  auto named = [&](StringRef entry, ArrayRef<double> attrs = {}) {
    c.entry = entry.str();
    c.attrs.append(attrs.begin(), attrs.end());
    return success();
  };
  auto attention = [&](auto a) {
    // The optional segments go after the results, so the other operands
    // keep their places.
    if (Value segments = a.getSegments()) {
      c.operands.erase(llvm::find(c.operands, segments));
      c.operands.push_back(segments);
    }
    return named(a->getName().getStringRef().ends_with("_grad")
                     ? "attention_grad"
                     : "attention",
                 {double(a.getNumHeads()), double(a.getNumKvHeads()),
                  double(a.getHeadDim()), a.getEffectiveScale(),
                  a.getCausal() ? 1.0 : 0.0, a.getSegments() ? 1.0 : 0.0});
  };
  LogicalResult r =
      llvm::TypeSwitch<Operation *, LogicalResult>(op)
          .Case([&](ReshapeOp) {
            c.entry.clear();
            return success();
          })
          .Case([&](ConvertOp) { return named("copy"); })
          .Case([&](TransposeOp t) {
            SmallVector<double> perm;
            for (int64_t p : t.getPermutation())
              perm.push_back(double(p));
            return named("transpose", perm);
          })
          .Case([&](arith::ConstantOp k) -> LogicalResult {
            auto dense = dyn_cast<DenseElementsAttr>(k.getValue());
            if (!dense || !dense.isSplat() ||
                !isa<FloatType>(dense.getElementType()))
              return op->emitOpError()
                     << "only splat float constants can be lowered";
            return named("fill",
                         {dense.getSplatValue<APFloat>().convertToDouble()});
          })
          .Case([&](EmbeddingOp) { return named("embedding"); })
          .Case([&](MatmulOp m) {
            return named("matmul", {m.getTransposeLhs() ? 1.0 : 0.0,
                                    m.getTransposeRhs() ? 1.0 : 0.0});
          })
          .Case([&](RMSNormOp n) {
            return named("rms_norm", {n.getEpsilon().convertToDouble()});
          })
          .Case([&](RopeOp r) {
            return named("rope", {double(r.getHeadDim()),
                                  r.getTheta().convertToDouble(), 1.0});
          })
          .Case([&](RopeGradOp r) {
            return named("rope", {double(r.getHeadDim()),
                                  r.getTheta().convertToDouble(), -1.0});
          })
          .Case([&](AttentionOp a) { return attention(a); })
          .Case([&](AttentionGradOp a) { return attention(a); })
          .Case([&](CacheWriteOp) { return named("cache_write"); })
          .Case([&](CacheAttentionOp a) {
            return named("cache_attention",
                         {double(a.getNumHeads()), double(a.getNumKvHeads()),
                          double(a.getHeadDim()), a.getEffectiveScale()});
          })
          .Case([&](SiluOp) { return named("silu"); })
          .Case([&](SwigluOp) { return named("swiglu"); })
          .Case([&](AddOp) { return named("add"); })
          .Case([&](MulOp) { return named("mul"); })
          .Case([&](CrossEntropyOp ce) {
            return named("cross_entropy",
                         {double(ce.getIgnoreIndexAttr().getInt()),
                          ce.getLossMask() ? 1.0 : 0.0});
          })
          .Case([&](CrossEntropyGradOp ce) {
            return named("cross_entropy_grad",
                         {double(ce.getIgnoreIndexAttr().getInt()),
                          ce.getLossMask() ? 1.0 : 0.0});
          })
          .Case([&](ReduceSumOp) { return named("reduce_sum"); })
          .Case([&](SiluGradOp) { return named("silu_grad"); })
          .Case([&](SwigluGradOp) { return named("swiglu_grad"); })
          .Case([&](RMSNormGradOp n) {
            return named("rms_norm_grad", {n.getEpsilon().convertToDouble()});
          })
          .Case([&](EmbeddingGradOp) { return named("embedding_grad"); })
          .Case([&](GlobalNormOp g) {
            return named("global_norm", {g.getAcrossRanks() ? 1.0 : 0.0});
          })
          .Case([&](AllReduceOp) { return named("all_reduce"); })
          .Case([&](ReduceScatterOp r) {
            return named("reduce_scatter", {double(r.getWorldSize())});
          })
          .Case([&](AllGatherOp g) {
            return named("all_gather", {double(g.getWorldSize())});
          })
          .Case([&](AdamWOp a) {
            return named("adamw", {a.getBeta1().convertToDouble(),
                                   a.getBeta2().convertToDouble(),
                                   a.getEpsilon().convertToDouble(),
                                   a.getWeightDecay().convertToDouble(),
                                   a.getMaxGradNorm().convertToDouble()});
          })
          .Case([&](AdamWGroupOp a) {
            // Operands: params, grads, moments1, moments2 (n each), the
            // four scalars; then new params, moments1, moments2 (n each)
            // and the working copies (k). Attributes: the betas, epsilon,
            // clipping, n, the n weight decays, k, the k parameter indices.
            SmallVector<double> attrs = {a.getBeta1().convertToDouble(),
                                         a.getBeta2().convertToDouble(),
                                         a.getEpsilon().convertToDouble(),
                                         a.getMaxGradNorm().convertToDouble(),
                                         double(a.getParams().size())};
            llvm::append_range(attrs, a.getWeightDecays());
            attrs.push_back(double(a.getWorking().size()));
            for (int64_t i : a.getWorking())
              attrs.push_back(double(i));
            return named("adamw_group", attrs);
          })
          .Case([&](SGDOp s) {
            return named("sgd", {s.getWeightDecay().convertToDouble(),
                                 s.getMaxGradNorm().convertToDouble()});
          })
          .Case([&](fp8::QuantizeOp q) {
            (void)named("quantize",
                        {q.getFormat() == fp8::Format::e5m2 ? 1.0 : 0.0,
                         q.getScaleRule() == fp8::ScaleRule::pow2 ? 1.0 : 0.0});
            appendBlock(c.attrs, q.getGranularity(), q.getInput());
            return success();
          })
          .Case([&](fp8::QuantizeDualOp q) {
            (void)named("quantize_dual",
                        {q.getFormat() == fp8::Format::e5m2 ? 1.0 : 0.0,
                         q.getScaleRule() == fp8::ScaleRule::pow2 ? 1.0 : 0.0});
            appendBlock(c.attrs, q.getGranularity(), q.getInput());
            appendBlock(c.attrs, q.getTransposedGranularity(), q.getDataT());
            return success();
          })
          .Case([&](fp8::DequantizeOp d) {
            (void)named("dequantize");
            appendBlock(c.attrs, d.getGranularity(), d.getData());
            return success();
          })
          .Case([&](fp8::ScaledMatmulOp m) {
            (void)named("scaled_matmul");
            appendBlock(c.attrs, m.getLhsGranularity(), m.getLhs());
            appendBlock(c.attrs, m.getRhsGranularity(), m.getRhs());
            return success();
          })
          .Case([&](fp8::AmaxOp a) {
            (void)named("amax");
            appendBlock(c.attrs, a.getGranularity(), a.getInput());
            return success();
          })
          .Default([&](Operation *) {
            return op->emitOpError()
                   << "has no runtime entry point to lower to";
          });
  if (failed(r))
    return failure();
  // An accumulator (the op's last operand) goes after the results, so the
  // other operands keep their places; the last attribute says whether
  // there is one.
  if (auto accumulating = dyn_cast<AccumulatingOpInterface>(op)) {
    Value acc = accumulating.getAccumulator();
    if (acc) {
      c.operands.erase(c.operands.begin() + op->getNumOperands() - 1);
      c.operands.push_back(acc);
    }
    c.attrs.push_back(acc ? 1.0 : 0.0);
  }
  // A norm gradient's residual (operand 3) goes last, and its flag.
  if (auto norm = dyn_cast<RMSNormGradOp>(op)) {
    if (Value residual = norm.getResidual()) {
      c.operands.erase(c.operands.begin() + 3);
      c.operands.push_back(residual);
    }
    c.attrs.push_back(norm.getResidual() ? 1.0 : 0.0);
  }
  if (c.entry.empty())
    return std::optional<CallSpec>();
  return std::optional<CallSpec>(std::move(c));
}

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

/// The fused entry point of a norm or SwiGLU and the quantize_dual of its
/// result scheduled right after it, both in one fp8.fused region; null
/// otherwise.
const char *fusedEntry(Operation *producer, Operation *next) {
  auto q = dyn_cast_or_null<fp8::QuantizeDualOp>(next);
  if (!q || !isa_and_nonnull<fp8::FusedOp>(producer->getParentOp()) ||
      q->getParentOp() != producer->getParentOp() ||
      q.getInput() != producer->getResult(0))
    return nullptr;
  if (isa<RMSNormOp>(producer))
    return "rms_norm_quantize_dual";
  if (isa<SwigluOp>(producer))
    return "swiglu_quantize_dual";
  return nullptr;
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
  DenseMap<Value, Value> alias;
  scheduleBlock(fn.getBody().front(), schedule, alias);
  std::vector<LoweredCall> calls;
  for (size_t i = 0; i < schedule.size(); ++i) {
    Operation *op = schedule[i];
    FailureOr<std::optional<CallSpec>> call = callFor(op);
    if (failed(call))
      return failure();
    if (!*call)
      continue;
    // A producer and its quantization: one call, one kernel on a GPU.
    Operation *next = i + 1 < schedule.size() ? schedule[i + 1] : nullptr;
    if (const char *fused = fusedEntry(op, next)) {
      FailureOr<std::optional<CallSpec>> quantize = callFor(next);
      if (failed(quantize))
        return failure();
      (*call)->entry = fused;
      (*call)->operands.append(std::next((*quantize)->operands.begin()),
                               (*quantize)->operands.end());
      (*call)->attrs.append((*quantize)->attrs);
      ++i;
    }
    LoweredCall lowered{(*call)->entry, {}, (*call)->attrs, op->getLoc(),
                        describe(op)};
    for (Value v : (*call)->operands) {
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
      fp8Weights);
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
