//===- InsertQuantization.cpp - Quantize the GEMMs decided FP8 ------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/Passes.h"

#include "RecipeUtils.h"

#include "infir2/Dialect/FP8/IR/FP8Attrs.h"
#include "infir2/Dialect/FP8/IR/FP8Dialect.h"
#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace infir2 {
#define GEN_PASS_DEF_INSERTQUANTIZATIONPASS
#include "infir2/Transforms/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

/// The granularity of a tensor after swapping its last two dimensions.
fp8::GranularityAttrInterface transposed(fp8::GranularityAttrInterface g,
                                         int64_t rank) {
  if (auto groups = dyn_cast<fp8::GroupsAttr>(g)) {
    int64_t dim = groups.getDim();
    if (dim == rank - 1)
      dim = rank - 2;
    else if (dim == rank - 2)
      dim = rank - 1;
    return fp8::GroupsAttr::get(g.getContext(), groups.getSize(), dim);
  }
  if (auto mx = dyn_cast<fp8::MxAttr>(g)) {
    int64_t dim = mx.getDim();
    if (dim == rank - 1 || dim == rank - 2)
      dim = 2 * rank - 3 - dim;
    return fp8::MxAttr::get(g.getContext(), dim);
  }
  if (auto blocks = dyn_cast<fp8::BlocksAttr>(g))
    return fp8::BlocksAttr::get(g.getContext(), blocks.getCols(),
                                blocks.getRows());
  return g;
}

/// Brings `v` to K-last layout ([..., rows, K]) and quantizes it; fails,
/// with a diagnostic on `op`, when the decision does not fit the operand.
FailureOr<std::pair<Value, Value>> quantize(OpBuilder &b, Operation *op,
                                            StringRef name, Value v, bool kLast,
                                            fp8::GranularityAttrInterface &g,
                                            fp8::Format format,
                                            fp8::ScaleRule rule) {
  Location loc = op->getLoc();
  auto type = cast<RankedTensorType>(v.getType());
  if (!isa<BFloat16Type, Float16Type, Float32Type>(type.getElementType()))
    return op->emitOpError()
           << "is decided fp8, but its " << name << " has element type "
           << type.getElementType() << " (quantize takes bf16, f16 or f32)";
  int64_t rank = type.getRank();
  if (!kLast) {
    SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(perm[rank - 1], perm[rank - 2]);
    SmallVector<int64_t> shape(type.getShape());
    std::swap(shape[rank - 1], shape[rank - 2]);
    v = TransposeOp::create(b, loc, type.clone(shape), v, perm);
    g = transposed(g, rank);
    type = cast<RankedTensorType>(v.getType());
  }
  FailureOr<SmallVector<int64_t>> scaleShape =
      fp8::getScaleShape(g, type.getShape(), [&] {
        return op->emitOpError()
               << "is decided fp8, but its " << name << " granularity does not "
               << "fit (after the transpose to K-last, if any): ";
      });
  if (failed(scaleShape))
    return failure();
  auto data = type.clone(fp8::getElementType(b.getContext(), format));
  auto scale = RankedTensorType::get(*scaleShape, g.getScaleElementType());
  auto q = fp8::QuantizeOp::create(
      b, loc, data, scale, v, fp8::FormatAttr::get(b.getContext(), format), g,
      fp8::ScaleRuleAttr::get(b.getContext(), rule));
  return std::pair<Value, Value>(q.getData(), q.getScale());
}

/// The tensor `q` quantizes. When `q` quantizes the [K, T] transpose of a
/// tensor viewed as a matrix of rows [T, K] — a rank-2 transpose of the
/// tensor itself, or of its leading dimensions collapsed by a reshape —
/// `transposed` is set and that tensor is returned.
Value quantizedSource(fp8::QuantizeOp q, bool &transposed) {
  Value v = q.getInput();
  transposed = false;
  auto t = v.getDefiningOp<TransposeOp>();
  if (!t || t.getPermutation() != ArrayRef<int64_t>{1, 0})
    return v;
  transposed = true;
  Value src = t.getInput();
  if (auto r = src.getDefiningOp<ReshapeOp>()) {
    ArrayRef<int64_t> from =
        cast<RankedTensorType>(r.getInput().getType()).getShape();
    if (from.size() >= 2 &&
        from.back() == cast<RankedTensorType>(src.getType()).getShape().back())
      return r.getInput(); // [..., K] -> [T, K]
  }
  return src;
}

/// Where a tensor is quantized both as it is and as its [K, T] transpose,
/// with one format and scale rule and one granularity per layout, replaces
/// all of those quantize ops (and the transposes) with one
/// fp8.quantize_dual.
void mergeDualLayouts(Block &block) {
  struct Uses {
    SmallVector<fp8::QuantizeOp> direct, transposed;
  };
  llvm::MapVector<Value, Uses> bySource;
  for (auto q : block.getOps<fp8::QuantizeOp>()) {
    bool transposed;
    Value src = quantizedSource(q, transposed);
    (transposed ? bySource[src].transposed : bySource[src].direct).push_back(q);
  }
  auto agree = [](ArrayRef<fp8::QuantizeOp> qs, fp8::QuantizeOp first) {
    return llvm::all_of(qs, [&](fp8::QuantizeOp q) {
      return q.getFormat() == first.getFormat() &&
             q.getScaleRule() == first.getScaleRule() &&
             q.getGranularity() == first.getGranularity() &&
             q.getScale().getType() == first.getScale().getType();
    });
  };
  for (auto &[src, uses] : bySource) {
    // A weight's two copies are made where each is read (fprop, dgrad): one
    // quantize_dual in the forward pass would keep the dgrad copy alive
    // through the whole step, while the BF16 weight is resident anyway.
    if (uses.direct.empty() || uses.transposed.empty() ||
        recipe::paramName(src))
      continue;
    fp8::QuantizeOp d = uses.direct.front(), t = uses.transposed.front();
    if (!agree(uses.direct, d) || !agree(uses.transposed, t) ||
        d.getFormat() != t.getFormat() || d.getScaleRule() != t.getScaleRule())
      continue;
    // Before the first of them, which the source dominates.
    Operation *first = d;
    for (auto q : llvm::concat<fp8::QuantizeOp>(uses.direct, uses.transposed))
      if (q->isBeforeInBlock(first))
        first = q;
    OpBuilder b(first);
    auto dual = fp8::QuantizeDualOp::create(
        b, d.getLoc(), d.getData().getType(), d.getScale().getType(),
        t.getData().getType(), t.getScale().getType(), src, d.getFormatAttr(),
        d.getGranularity(), t.getGranularity(), d.getScaleRuleAttr());
    for (fp8::QuantizeOp q : uses.direct) {
      q.getData().replaceAllUsesWith(dual.getData());
      q.getScale().replaceAllUsesWith(dual.getScale());
      q.erase();
    }
    for (fp8::QuantizeOp q : uses.transposed) {
      q.getData().replaceAllUsesWith(dual.getDataT());
      q.getScale().replaceAllUsesWith(dual.getScaleT());
      Operation *transpose = q.getInput().getDefiningOp();
      Operation *reshape = transpose->getOperand(0).getDefiningOp();
      q.erase();
      if (transpose->use_empty())
        transpose->erase();
      if (isa_and_nonnull<ReshapeOp>(reshape) && reshape->use_empty())
        reshape->erase();
    }
  }
}

struct InsertQuantizationPass
    : public infir2::impl::InsertQuantizationPassBase<InsertQuantizationPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<GemmOpInterface> gemms;
    getOperation().walk([&](GemmOpInterface gemm) {
      auto d = gemm->getAttrOfType<fp8::DecisionAttr>(
          fp8::FP8Dialect::getDecisionAttrName());
      if (d && d.getPrecision() == fp8::Precision::fp8 &&
          !isa<fp8::ScaledMatmulOp>(gemm.getOperation()))
        gemms.push_back(gemm);
    });
    llvm::SetVector<Block *> blocks;
    for (GemmOpInterface gemm : gemms) {
      blocks.insert(gemm->getBlock());
      if (failed(rewrite(gemm)))
        return signalPassFailure();
    }
    if (dualLayouts)
      for (Block *block : blocks)
        mergeDualLayouts(*block);
  }

  LogicalResult rewrite(GemmOpInterface gemm) {
    Operation *op = gemm.getOperation();
    auto d = op->getAttrOfType<fp8::DecisionAttr>(
        fp8::FP8Dialect::getDecisionAttrName());
    if (!gemm.isSupportedGemm())
      return op->emitOpError()
             << "is decided fp8, but is not a GEMM form the recipe handles "
                "(operand layout or buffers)";
    Value result = gemm.getGemmResult();
    auto resultType = cast<RankedTensorType>(result.getType());
    if (!isa<BFloat16Type, Float32Type>(resultType.getElementType()))
      return op->emitOpError()
             << "is decided fp8 but writes " << resultType.getElementType()
             << "; FP8 GEMMs write bf16 or f32";
    OpBuilder b(op);
    // Keep the weight's name: once quantized, no operand is the parameter.
    std::optional<StringRef> weight;
    for (Value v : {gemm.getGemmRhs(), gemm.getGemmLhs()})
      if (!weight)
        weight = recipe::paramName(v);
    fp8::GranularityAttrInterface ga = d.getLhs(), gb = d.getRhs();
    auto lhs =
        quantize(b, op, "lhs", gemm.getGemmLhs(), gemm.isLhsContractionLast(),
                 ga, *d.getLhsFormat(), *d.getScales());
    if (failed(lhs))
      return failure();
    auto rhs =
        quantize(b, op, "rhs", gemm.getGemmRhs(), gemm.isRhsContractionLast(),
                 gb, *d.getRhsFormat(), *d.getScales());
    if (failed(rhs))
      return failure();
    auto [qa, sa] = *lhs;
    auto [qb, sb] = *rhs;
    // The decision moves along, now with the granularities of the TN
    // operands.
    fp8::ScaledMatmulOp mm =
        recipe::replaceWithScaledMatmul(gemm, qa, sa, ga, qb, sb, gb);
    if (weight)
      mm->setAttr(Infir2Dialect::getGemmWeightAttrName(),
                  b.getStringAttr(*weight));
    mm->setAttr(fp8::FP8Dialect::getDecisionAttrName(),
                fp8::DecisionAttr::get(b.getContext(), d.getPrecision(),
                                       d.getRole(), ga, gb, d.getLhsFormat(),
                                       d.getRhsFormat(), d.getScales(),
                                       d.getReason()));
    return success();
  }
};

} // namespace
