//===- AssignPrecision.cpp - Decide FP8 or high precision per GEMM --------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "PrecisionCost.h"
#include "RecipeUtils.h"

#include "infir2/Dialect/FP8/IR/FP8Attrs.h"
#include "infir2/Dialect/FP8/IR/FP8Dialect.h"
#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/Transforms/StepTime.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

namespace infir2 {
#define GEN_PASS_DEF_ASSIGNPRECISIONPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;
using fp8::DecisionAttr;
using fp8::GemmRole;
using fp8::Precision;
using recipe::paramName;

namespace {

/// The decoder layer of a Hugging Face weight name ("model.layers.3.…").
std::optional<int64_t> layerOf(StringRef weight) {
  size_t at = weight.find("layers.");
  if (at == StringRef::npos)
    return std::nullopt;
  int64_t layer;
  if (weight.substr(at + 7).take_while(llvm::isDigit).getAsInteger(10, layer))
    return std::nullopt;
  return layer;
}

struct GemmInfo {
  mutable GemmOpInterface op; // interface methods are not const
  GemmRole role;
  std::string weight; // empty when the GEMM has none
  int weightOperand;  // 0 or 1, -1 when no operand is the weight
  int gradOperand;    // for dgrad/wgrad: the operand carrying dL/dC
};

GemmInfo describe(GemmOpInterface gemm) {
  Operation *op = gemm.getOperation();
  GemmInfo info{gemm, GemmRole::fprop, "", -1, -1};
  if (auto role =
          op->getAttrOfType<StringAttr>(Infir2Dialect::getGemmRoleAttrName()))
    info.role = role.getValue() == "wgrad" ? GemmRole::wgrad : GemmRole::dgrad;
  if (auto g = op->getAttrOfType<IntegerAttr>(
          Infir2Dialect::getGemmGradOperandAttrName()))
    info.gradOperand = g.getInt();
  Value operands[] = {gemm.getGemmLhs(), gemm.getGemmRhs()};
  for (int i : {1, 0})
    if (std::optional<StringRef> name = paramName(operands[i])) {
      info.weight = name->str();
      info.weightOperand = i;
      break;
    }
  if (auto w =
          op->getAttrOfType<StringAttr>(Infir2Dialect::getGemmWeightAttrName());
      w && info.weight.empty())
    info.weight = w.getValue().str();
  // A plain linalg GEMM of unnamed tensors: treat B as the weight.
  if (info.role == GemmRole::fprop && info.weightOperand < 0)
    info.weightOperand = 1;
  return info;
}

struct AssignPrecisionPass
    : public infir2::impl::AssignPrecisionPassBase<AssignPrecisionPass> {
  using Base::Base;

  void runOnOperation() override;
  DecisionAttr decide(const GemmInfo &g, const llvm::StringSet<> &lmHead,
                      int64_t numLayers);

  std::optional<StepTimeTarget> costTarget;
  /// A list option's entry, parsed: the weight, and the role or none (all).
  struct GemmSelector {
    std::string weight;
    std::optional<GemmRole> role;
    bool matched = false;
    /// Whether it selects `g` (and then remembers that it matched).
    bool selects(const GemmInfo &g) {
      if (weight != g.weight || (role && *role != g.role))
        return false;
      return matched = true;
    }
  };
  SmallVector<GemmSelector> keptHigh, forcedE5M2;
  LogicalResult parseSelectors(StringRef option, ArrayRef<std::string> entries,
                               SmallVectorImpl<GemmSelector> &out);
  LogicalResult checkAllMatched(StringRef option,
                                ArrayRef<GemmSelector> selectors);
  DecisionAttr high(GemmRole role, const Twine &reason) {
    return DecisionAttr::get(&getContext(), Precision::high, role, {}, {},
                             std::nullopt, std::nullopt, std::nullopt,
                             reason.str());
  }
};

void AssignPrecisionPass::runOnOperation() {
  if (!costModel.empty()) {
    // (A calibrated cpu target is not an option here: the CPU's FP8 GEMMs
    // are emulated and never pay.)
    std::string error;
    FailureOr<StepTimeTarget> t = lookUpStepTimeTarget(costModel, "", error);
    if (failed(t)) {
      getOperation().emitError()
          << "cost-model must be h100 or h200, got '" << costModel << "'";
      return signalPassFailure();
    }
    costTarget = *t;
  }
  if (granularity == Granularity::mxfp8 && costTarget) {
    getOperation().emitError()
        << "cost-model=" << costModel
        << " prices Hopper's FP8 GEMMs and a weight cache; granularity=mxfp8 "
           "runs on Blackwell and quantizes its weights every step: leave "
           "cost-model out";
    return signalPassFailure();
  }
  if (granularity == Granularity::mxfp8 && scales == ScalePolicy::fp32) {
    getOperation().emitError()
        << "granularity=mxfp8 takes power-of-two scales (E8M0, as the MX "
           "format stores them): scales=fp32 does not apply; take pow2 "
           "(rounded up, the default) or floor (the specification's rule)";
    return signalPassFailure();
  }
  if (failed(parseSelectors("keep-high", keepHigh, keptHigh)) ||
      failed(parseSelectors("e5m2", e5m2, forcedE5M2)))
    return signalPassFailure();
  getOperation().walk([&](FunctionOpInterface fn) {
    SmallVector<GemmInfo> gemms;
    // GEMMs already in FP8 keep their decision: the pass can run again on
    // its own output.
    fn.walk([&](GemmOpInterface gemm) {
      if (!isa<fp8::ScaledMatmulOp>(gemm.getOperation()))
        gemms.push_back(describe(gemm));
    });
    llvm::StringSet<> lmHead = recipe::lmHeadWeights(fn);
    int64_t numLayers = 0;
    for (const GemmInfo &g : gemms)
      if (std::optional<int64_t> l = layerOf(g.weight))
        numLayers = std::max(numLayers, *l + 1);
    // Generation runs in the model's own precision (--infir2-derive-decode).
    bool isDecodeStep = SymbolTable::getSymbolName(fn) == "decode_step";
    SmallVector<DecisionAttr> decisions;
    for (const GemmInfo &g : gemms)
      decisions.push_back(isDecodeStep
                              ? high(g.role, "the decode step generates in "
                                             "the model's own precision")
                              : decide(g, lmHead, numLayers));
    // The cost model may keep groups of FP8 GEMMs in high precision.
    if (costTarget) {
      SmallVector<CostCandidate> candidates;
      for (auto [g, decision] : llvm::zip_equal(gemms, decisions)) {
        if (decision.getPrecision() != Precision::fp8)
          continue;
        CostCandidate c{g.op.getOperation(), {}};
        Value operands[] = {g.op.getGemmLhs(), g.op.getGemmRhs()};
        for (int i : {0, 1})
          if (g.role == GemmRole::wgrad || i != g.weightOperand)
            c.quantized.push_back(operands[i]);
        candidates.push_back(c);
      }
      llvm::DenseMap<Operation *, std::string> kept =
          keptHighByCost(candidates, *costTarget);
      for (auto [g, decision] : llvm::zip_equal(gemms, decisions))
        if (auto it = kept.find(g.op.getOperation()); it != kept.end())
          decision = high(g.role, it->second);
    }
    for (auto [g, decision] : llvm::zip_equal(gemms, decisions))
      g.op->setAttr(fp8::FP8Dialect::getDecisionAttrName(), decision);
  });
  // An entry that names no GEMM is a typo, not a choice.
  if (failed(checkAllMatched("keep-high", keptHigh)) ||
      failed(checkAllMatched("e5m2", forcedE5M2)))
    signalPassFailure();
}

LogicalResult
AssignPrecisionPass::parseSelectors(StringRef option,
                                    ArrayRef<std::string> entries,
                                    SmallVectorImpl<GemmSelector> &out) {
  for (StringRef entry : entries) {
    auto [weight, role] = entry.rsplit(':');
    GemmSelector k{weight.str(), std::nullopt};
    if (!role.empty()) {
      k.role = fp8::symbolizeGemmRole(role);
      if (!k.role) // after the last ':', a role or nothing
        return getOperation().emitError()
               << option << " entry '" << entry
               << "': the role after ':' must be fprop, dgrad or wgrad, got '"
               << role << "'";
    }
    out.push_back(k);
  }
  return success();
}

LogicalResult
AssignPrecisionPass::checkAllMatched(StringRef option,
                                     ArrayRef<GemmSelector> selectors) {
  for (const GemmSelector &k : selectors)
    if (!k.matched)
      return getOperation().emitError()
             << option << " names '" << k.weight
             << (k.role ? ":" + fp8::stringifyGemmRole(*k.role).str() : "")
             << "', which no GEMM has (infir2-opt --infir2-fp8-report lists "
                "the GEMMs by weight and role)";
  return success();
}

DecisionAttr AssignPrecisionPass::decide(const GemmInfo &g,
                                         const llvm::StringSet<> &lmHead,
                                         int64_t numLayers) {
  // keep-high first: an entry matches its GEMMs whatever else would keep
  // them high.
  bool kept = false;
  for (GemmSelector &k : keptHigh)
    kept |= k.selects(g);
  // An e5m2 entry puts both operands of its GEMMs in E5M2, whatever
  // `format` says, where they run in FP8.
  bool allE5M2 = false;
  for (GemmSelector &k : forcedE5M2)
    allE5M2 |= k.selects(g);
  if (kept)
    return high(g.role, "kept high by bisection (keep-high)");
  if (!g.op.isSupportedGemm())
    return high(g.role, "a GEMM form the recipe does not handle (operand "
                        "layout or buffers)");
  auto eltOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType();
  };
  Type a = eltOf(g.op.getGemmLhs()), b = eltOf(g.op.getGemmRhs()),
       c = eltOf(g.op.getGemmResult());
  if (!isa<BFloat16Type, Float16Type, Float32Type>(a) ||
      !isa<BFloat16Type, Float16Type, Float32Type>(b) ||
      !isa<BFloat16Type, Float32Type>(c))
    return high(g.role, "FP8 GEMMs take bf16, f16 or f32 operands and write "
                        "bf16 or f32");
  if (recipe::isLMHead(g.op, lmHead))
    return high(g.role, "the LM head stays in high precision");
  if (std::optional<int64_t> layer = layerOf(g.weight);
      layer && keepFirstLast > 0 &&
      (*layer < keepFirstLast || *layer >= numLayers - keepFirstLast))
    return high(g.role, llvm::formatv("decoder layer {0} is among the first "
                                      "or last {1} (keep-first-last)",
                                      *layer, keepFirstLast));

  GemmDims d = getGemmDims(g.op);
  int64_t rows = d.batch * d.m;
  int64_t block = granularity == Granularity::blockwise ? 128
                  : granularity == Granularity::mxfp8 ? fp8::MxAttr::kBlockSize
                                                      : 16;
  for (auto [name, size] :
       {std::pair<StringRef, int64_t>{"M", rows}, {"N", d.n}, {"K", d.k}})
    if (size % block != 0)
      return high(g.role, llvm::formatv("{0} = {1} is not a multiple of the "
                                        "{2} block ({3})",
                                        name, size, stringify(granularity), block));
  double flops = 2.0 * rows * d.n * d.k;
  if (flops < minGemmFlops)
    return high(g.role, llvm::formatv("{0:e2} flops is below min-gemm-flops "
                                      "({1:e2}): too small to gain",
                                      flops, minGemmFlops.getValue()));

  // FP8: each operand's granularity as it is stored in this GEMM.
  MLIRContext *ctx = &getContext();
  Value operands[] = {g.op.getGemmLhs(), g.op.getGemmRhs()};
  bool kLast[] = {g.op.isLhsContractionLast(), g.op.isRhsContractionLast()};
  fp8::GranularityAttrInterface gran[2];
  std::optional<fp8::Format> fmt[2];
  for (int i : {0, 1}) {
    int64_t rank = cast<RankedTensorType>(operands[i].getType()).getRank();
    int64_t kDim = kLast[i] ? rank - 1 : rank - 2;
    bool isWeight = g.role != GemmRole::wgrad && i == g.weightOperand;
    if (granularity == Granularity::tensorwise)
      gran[i] = fp8::TensorwiseAttr::get(ctx);
    else if (granularity == Granularity::rowwise)
      gran[i] = fp8::GroupsAttr::get(ctx, d.k, kDim);
    else if (granularity == Granularity::mxfp8)
      gran[i] = fp8::MxAttr::get(ctx, kDim);
    else if (isWeight)
      gran[i] = fp8::BlocksAttr::get(ctx, 128, 128);
    else
      gran[i] = fp8::GroupsAttr::get(ctx, 128, kDim);
    bool isGradient = g.role != GemmRole::fprop && i == g.gradOperand;
    fmt[i] = allE5M2 || (format == FormatPolicy::hybrid && isGradient)
                 ? fp8::Format::e5m2
                 : fp8::Format::e4m3;
  }
  std::string reason = g.weight.empty()
                           ? std::string("a GEMM the policy allows in FP8")
                           : "linear layer " + g.weight;
  if (allE5M2)
    reason += ", both operands E5M2 (e5m2)";
  return DecisionAttr::get(
      ctx, Precision::fp8, g.role, gran[0], gran[1], fmt[0], fmt[1],
      scales == ScalePolicy::pow2   ? fp8::ScaleRule::pow2
      : scales == ScalePolicy::fp32 ? fp8::ScaleRule::fp32
                                    : fp8::ScaleRule::floor,
      reason);
}

} // namespace
