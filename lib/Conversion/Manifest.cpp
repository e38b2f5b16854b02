//===- Manifest.cpp - The manifest a compiled trainer embeds --------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The typed manifest of runtime/include/infir2/runtime/Manifest.h, filled
// from the module's #infir2rt.plan and serialized as JSON by the runtime's
// own writer, so that the compiler and the trainer share one definition of
// the format (and its ABI version).
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"

#include "infir2/Dialect/FP8/IR/FP8Attrs.h"
#include "infir2/Dialect/FP8/IR/FP8Dialect.h"
#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "infir2/Transforms/MemoryPlan.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/Dialect/Runtime/IR/RuntimeDialect.h"
#include "infir2/runtime/Manifest.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace infir2;

/// The optimizer's settings, from the updates of @optimizer_step (adamw,
/// adamw_group, sgd): those of the first; the weight decay is the largest of
/// all (1-D parameters are updated without decay). None when the step has no update.
static std::optional<rt::ManifestOptimizer> optimizerOf(func::FuncOp step) {
  std::optional<rt::ManifestOptimizer> m;
  step.walk([&](Operation *op) {
    rt::ManifestOptimizer o;
    if (auto adamw = dyn_cast<AdamWOp>(op)) {
      o.kind = "adamw";
      o.beta1 = adamw.getBeta1Attr().getValueAsDouble();
      o.beta2 = adamw.getBeta2Attr().getValueAsDouble();
      o.eps = adamw.getEpsilonAttr().getValueAsDouble();
      o.weightDecay = adamw.getWeightDecayAttr().getValueAsDouble();
      o.gradClip = adamw.getMaxGradNormAttr().getValueAsDouble();
    } else if (auto group = dyn_cast<AdamWGroupOp>(op)) {
      o.kind = "adamw";
      o.beta1 = group.getBeta1().convertToDouble();
      o.beta2 = group.getBeta2().convertToDouble();
      o.eps = group.getEpsilon().convertToDouble();
      for (double wd : group.getWeightDecays())
        o.weightDecay = std::max(o.weightDecay, wd);
      o.gradClip = group.getMaxGradNorm().convertToDouble();
    } else if (auto sgd = dyn_cast<SGDOp>(op)) {
      o.kind = "sgd";
      o.weightDecay = sgd.getWeightDecayAttr().getValueAsDouble();
      o.gradClip = sgd.getMaxGradNormAttr().getValueAsDouble();
    } else {
      return;
    }
    if (!m)
      m = o;
    else
      m->weightDecay = std::max(m->weightDecay, o.weightDecay);
  });
  return m;
}

std::vector<rt::ManifestFp8Weight>
infir2::fp8WeightsOf(ArrayRef<func::FuncOp> planned) {
  std::vector<rt::ManifestFp8Weight> weights;
  llvm::StringSet<> seen;
  for (func::FuncOp fn : planned)
    fn.walk([&](Operation *op) {
      auto decision = op->getAttrOfType<fp8::DecisionAttr>(
          fp8::FP8Dialect::getDecisionAttrName());
      auto weight =
          op->getAttrOfType<StringAttr>(Infir2Dialect::getGemmWeightAttrName());
      if (!decision || !weight ||
          decision.getPrecision() != fp8::Precision::fp8 ||
          decision.getRole() != fp8::GemmRole::fprop)
        return;
      auto blocks = dyn_cast_or_null<fp8::BlocksAttr>(decision.getRhs());
      if (!blocks || !seen.insert(weight.getValue()).second)
        return;
      rt::ManifestFp8Weight w;
      w.name = weight.getValue().str();
      w.blockRows = blocks.getRows();
      w.blockCols = blocks.getCols();
      if (auto format = decision.getRhsFormat())
        w.format = fp8::stringifyFormat(*format).str();
      if (auto scales = decision.getScales())
        w.scales = fp8::stringifyScaleRule(*scales).str();
      weights.push_back(std::move(w));
    });
  return weights;
}

uint32_t infir2::fp8GemmsOf(ArrayRef<func::FuncOp> planned) {
  // Hopper's 128-wide blocks (1x128 groups, 128x128 blocks) and
  // Blackwell's MX blocks; per-tensor scales run anywhere. Both operands
  // in E5M2 run on the CPU only (cuBLASLt has no such kernel).
  uint32_t m = 0;
  for (func::FuncOp fn : planned)
    fn.walk([&](Operation *op) {
      auto d = op->getAttrOfType<fp8::DecisionAttr>(
          fp8::FP8Dialect::getDecisionAttrName());
      if (!d || d.getPrecision() != fp8::Precision::fp8)
        return;
      if (d.getLhsFormat() == fp8::Format::e5m2 &&
          d.getRhsFormat() == fp8::Format::e5m2)
        m |= INFIR2RT_FP8_GEMM_E5M2_PAIR;
      for (fp8::GranularityAttrInterface g : {d.getLhs(), d.getRhs()}) {
        auto groups = dyn_cast<fp8::GroupsAttr>(g);
        if (isa<fp8::MxAttr>(g))
          m |= INFIR2RT_FP8_GEMM_MX;
        else if (isa<fp8::BlocksAttr>(g) || (groups && groups.getSize() == 128))
          m |= INFIR2RT_FP8_GEMM_BLOCK128;
      }
    });
  return m;
}

FailureOr<std::string> infir2::buildManifest(
    rtir::PlanAttr plan, ArrayRef<func::FuncOp> planned, StringRef modelConfig,
    ArrayRef<rt::ManifestFp8Weight> fp8Weights, uint32_t fp8Gemms) {
  rt::Manifest m;
  m.modelConfig = modelConfig.str();
  m.fp8Weights.assign(fp8Weights.begin(), fp8Weights.end());
  m.fp8Gemms = fp8Gemms;
  m.stateBytes = plan.getStateBytes();
  m.scratchBytes = plan.getScratchBytes();
  m.batch = plan.getBatch();
  m.seq = plan.getSeq();
  m.vocab = plan.getVocab();
  m.zero1WorldSize = plan.getZero1WorldSize();
  // A tensor-parallel model's shards, by parameter name; the parameter's
  // state (master, moments, gradient) is split the same way.
  llvm::StringMap<int64_t> tpDims;
  for (func::FuncOp fn : planned)
    for (auto [i, param] : getParams(fn))
      if (auto dim = fn.getArgAttrOfType<IntegerAttr>(
              i, Infir2Dialect::getTPShardAttrName()))
        tpDims[param.getName()] = dim.getInt();
  if (!planned.empty())
    if (auto size = planned.front()
                        ->getParentOfType<ModuleOp>()
                        ->getAttrOfType<IntegerAttr>(
                            Infir2Dialect::getTensorParallelAttrName()))
      m.tensorParallel = size.getInt();
  for (auto s : plan.getSlots().getAsRange<rtir::SlotAttr>()) {
    rt::ManifestSlot slot;
    std::optional<rt::SlotKind> kind =
        rt::parseSlotKind(rtir::stringifySlotKind(s.getKind()));
    if (!kind)
      return emitError(UnknownLoc::get(plan.getContext()))
             << "slot kind '" << rtir::stringifySlotKind(s.getKind())
             << "' has no runtime counterpart (runtime/include/infir2/"
                "runtime/Manifest.h)";
    slot.kind = *kind;
    slot.name = s.getName().str();
    llvm::raw_string_ostream ds(slot.dtype);
    ds << s.getType().getElementType();
    slot.offset = s.getOffset();
    slot.bytes = storedBytes(s.getType());
    slot.shape.assign(s.getType().getShape().begin(),
                      s.getType().getShape().end());
    if (auto p = dyn_cast_or_null<ParamAttr>(s.getInit())) {
      slot.init = stringifyInitKind(p.getInit()).str();
      slot.std = p.getStd().convertToDouble();
    }
    if (llvm::is_contained({rt::SlotKind::Param, rt::SlotKind::Master,
                            rt::SlotKind::Moment1, rt::SlotKind::Moment2,
                            rt::SlotKind::Grad},
                           slot.kind))
      if (auto it = tpDims.find(slot.name); it != tpDims.end())
        slot.tpDim = it->second;
    m.slots.push_back(std::move(slot));
  }
  for (func::FuncOp fn : planned) {
    StringRef symbol =
        fn->getAttrOfType<StringAttr>(rtir::RuntimeDialect::getSymbolAttrName())
            .getValue();
    m.functions.push_back(
        {symbol.str(), fn->getAttrOfType<IntegerAttr>(
                             rtir::RuntimeDialect::getScratchBytesAttrName())
                           .getInt()});
    if (symbol == rtir::RuntimeDialect::getStepSymbols()[1])
      m.optimizer = optimizerOf(fn);
  }
  return rt::toJson(m);
}
