//===- Infir2Ops.cpp - Verifiers and folders of infir2 ops ----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The verifiers and folders of the model ops (Infir2Ops.td), the checks they
// share with the gradient ops, and the generated op definitions of the whole
// dialect.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "Infir2OpVerifiers.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace infir2;
using namespace infir2::detail;

//===----------------------------------------------------------------------===//
// Checks shared with the gradient ops
//===----------------------------------------------------------------------===//

LogicalResult infir2::detail::checkShape(Operation *op, StringRef name,
                                         Value actual,
                                         ArrayRef<int64_t> expected,
                                         StringRef why) {
  if (shapeOf(actual) == expected)
    return success();
  return op->emitOpError() << "expects '" << name << "' of shape "
                           << "[" << expected << "]"
                           << " (" << why << "), got "
                           << "[" << shapeOf(actual) << "]";
}

LogicalResult infir2::detail::checkSameElementType(Operation *op,
                                                   StringRef name, Value v,
                                                   StringRef refName,
                                                   Value ref) {
  if (elementTypeOf(v) == elementTypeOf(ref))
    return success();
  return op->emitOpError() << "expects '" << name
                           << "' to have the element type of '" << refName
                           << "' (" << elementTypeOf(ref) << "), got "
                           << elementTypeOf(v);
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  if (rankOf(getTable()) != 2)
    return emitOpError()
           << "expects 'table' of rank 2 ([vocab, dim]), got shape "
           << "[" << shapeOf(getTable()) << "]";
  SmallVector<int64_t> expected(shapeOf(getIds()));
  expected.push_back(shapeOf(getTable())[1]);
  if (failed(checkShape(*this, "result", getResult(), expected,
                        "the ids' shape followed by the table's row size")))
    return failure();
  return checkSameElementType(*this, "result", getResult(), "table",
                              getTable());
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>>
infir2::inferMatmulShape(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs,
                         bool transposeLhs, bool transposeRhs,
                         function_ref<InFlightDiagnostic()> emitError) {
  if (lhs.size() < 2) {
    emitError() << "expects 'lhs' of rank at least 2, got shape "
                << "[" << lhs << "]";
    return failure();
  }
  if (rhs.size() != 2 && rhs.size() != lhs.size()) {
    emitError() << "expects 'rhs' of rank 2 or of the rank of 'lhs' ("
                << lhs.size() << "), got shape "
                << "[" << rhs << "]";
    return failure();
  }
  size_t batchRank = lhs.size() - 2;
  if (rhs.size() == lhs.size() &&
      lhs.take_front(batchRank) != rhs.take_front(batchRank)) {
    emitError() << "expects equal batch dimensions, got 'lhs' "
                << "[" << lhs << "]"
                << " and 'rhs' "
                << "[" << rhs << "]";
    return failure();
  }
  int64_t m = lhs[lhs.size() - (transposeLhs ? 1 : 2)];
  int64_t kl = lhs[lhs.size() - (transposeLhs ? 2 : 1)];
  int64_t kr = rhs[rhs.size() - (transposeRhs ? 1 : 2)];
  int64_t n = rhs[rhs.size() - (transposeRhs ? 2 : 1)];
  if (kl != kr) {
    emitError() << "expects the contraction dimensions to match, got " << kl
                << " in 'lhs' "
                << "[" << lhs << "]"
                << " and " << kr << " in 'rhs' "
                << "[" << rhs << "]";
    return failure();
  }
  SmallVector<int64_t> result(lhs.take_front(batchRank));
  result.push_back(m);
  result.push_back(n);
  return result;
}

LogicalResult infir2::detail::verifyAccumulator(Operation *op, Value acc,
                                                Value result, bool orBF16) {
  if (!acc)
    return success();
  if (acc.getType() != result.getType())
    return op->emitOpError()
           << "expects the accumulator 'acc' to have the result's type "
           << result.getType() << ", got " << acc.getType();
  Type e = elementTypeOf(result);
  if (orBF16 && !e.isF32() && !e.isBF16())
    return op->emitOpError() << "accumulates in f32 or bf16 only: expects "
                                "such a result with 'acc', got "
                             << e;
  if (!orBF16 && !e.isF32())
    return op->emitOpError() << "accumulates in f32 only: expects an f32 "
                                "result with 'acc', got "
                             << e;
  return success();
}

LogicalResult MatmulOp::verify() {
  FailureOr<SmallVector<int64_t>> expected =
      inferMatmulShape(shapeOf(getLhs()), shapeOf(getRhs()), getTransposeLhs(),
                       getTransposeRhs(), [&] { return emitOpError(); });
  if (failed(expected))
    return failure();
  if (failed(checkShape(*this, "result", getResult(), *expected,
                        "batch dimensions followed by M and N")))
    return failure();
  if (failed(checkSameElementType(*this, "rhs", getRhs(), "lhs", getLhs())))
    return failure();
  Type resultElt = elementTypeOf(getResult());
  if (resultElt != elementTypeOf(getLhs()) && !resultElt.isF32())
    return emitOpError() << "expects the result element type to be the "
                            "operands' ("
                         << elementTypeOf(getLhs()) << ") or f32, got "
                         << resultElt;
  return verifyAccumulator(*this, getAcc(), getResult(), /*orBF16=*/true);
}

Value MatmulOp::getGemmLhs() { return getLhs(); }
Value MatmulOp::getGemmRhs() { return getRhs(); }
Value MatmulOp::getGemmResult() { return getResult(); }
bool MatmulOp::isLhsContractionLast() { return !getTransposeLhs(); }
bool MatmulOp::isRhsContractionLast() { return getTransposeRhs(); }
bool MatmulOp::isSupportedGemm() { return true; }

GemmDims infir2::getGemmDims(GemmOpInterface gemm) {
  ArrayRef<int64_t> a = shapeOf(gemm.getGemmLhs());
  ArrayRef<int64_t> b = shapeOf(gemm.getGemmRhs());
  bool aK = gemm.isLhsContractionLast(), bK = gemm.isRhsContractionLast();
  GemmDims d;
  d.batch = 1;
  for (int64_t x : a.drop_back(2))
    d.batch *= x;
  d.m = a[a.size() - (aK ? 2 : 1)];
  d.k = a[a.size() - (aK ? 1 : 2)];
  d.n = b[b.size() - (bK ? 2 : 1)];
  return d;
}

//===----------------------------------------------------------------------===//
// RMSNormOp
//===----------------------------------------------------------------------===//

LogicalResult infir2::detail::verifyRMSNorm(Operation *op, Value input,
                                            Value weight) {
  if (rankOf(input) < 1)
    return op->emitOpError() << "expects 'input' of rank at least 1";
  int64_t dim = shapeOf(input).back();
  if (failed(checkShape(op, "weight", weight, {dim},
                        "the last dimension of 'input'")))
    return failure();
  return checkSameElementType(op, "weight", weight, "input", input);
}

LogicalResult RMSNormOp::verify() {
  return verifyRMSNorm(*this, getInput(), getWeight());
}

//===----------------------------------------------------------------------===//
// RopeOp
//===----------------------------------------------------------------------===//

LogicalResult infir2::detail::verifyRope(Operation *op, Value input,
                                         StringRef inputName, Value positions,
                                         int64_t headDim) {
  ArrayRef<int64_t> in = shapeOf(input);
  if (in.size() < 2)
    return op->emitOpError() << "expects '" << inputName
                             << "' of rank at least 2 ([..., seq, "
                                "heads * head_dim]), got shape "
                             << "[" << in << "]";
  if (headDim % 2 != 0)
    return op->emitOpError()
           << "expects an even head_dim (dimensions rotate in "
              "pairs), got "
           << headDim;
  if (in.back() % headDim != 0)
    return op->emitOpError()
           << "expects the last dimension of '" << inputName << "' ("
           << in.back() << ") to be a multiple of head_dim (" << headDim << ")";
  ArrayRef<int64_t> pos = shapeOf(positions);
  ArrayRef<int64_t> lead = in.drop_back();
  if (pos != lead && pos != lead.take_back(1))
    return op->emitOpError() << "expects 'positions' of shape "
                             << "[" << lead.take_back(1) << "]"
                             << " or "
                             << "[" << lead << "]"
                             << " (the input's shape without its "
                                "last dimension), got "
                             << "[" << pos << "]";
  return success();
}

LogicalResult RopeOp::verify() {
  return verifyRope(*this, getInput(), "input", getPositions(), getHeadDim());
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

double infir2::detail::effectiveScale(std::optional<llvm::APFloat> scale,
                                      int64_t headDim) {
  if (scale)
    return scale->convertToDouble();
  return 1.0 / std::sqrt(static_cast<double>(headDim));
}

double AttentionOp::getEffectiveScale() {
  return effectiveScale(getScale(), getHeadDim());
}

/// Checks query, key, value and the optional segments of `attention` and
/// `attention_grad`.
LogicalResult infir2::detail::verifyAttention(Operation *op, Value query,
                                              Value key, Value value,
                                              Value segments, int64_t heads,
                                              int64_t kvHeads, int64_t hd,
                                              bool causal) {
  for (auto [name, v] : {std::pair<StringRef, Value>{"query", query},
                         {"key", key},
                         {"value", value}}) {
    if (rankOf(v) != 3)
      return op->emitOpError()
             << "expects '" << name
             << "' of rank 3 ([batch, seq, heads * head_dim]), got shape ["
             << shapeOf(v) << "]";
    if (failed(checkSameElementType(op, name, v, "query", query)))
      return failure();
  }
  if (heads % kvHeads != 0)
    return op->emitOpError()
           << "expects num_heads (" << heads
           << ") to be a multiple of num_kv_heads (" << kvHeads << ")";
  ArrayRef<int64_t> q = shapeOf(query), k = shapeOf(key);
  if (q.back() != heads * hd)
    return op->emitOpError()
           << "expects the last dimension of 'query' (" << q.back()
           << ") to be num_heads * head_dim (" << heads * hd << ")";
  if (k.back() != kvHeads * hd)
    return op->emitOpError()
           << "expects the last dimension of 'key' (" << k.back()
           << ") to be num_kv_heads * head_dim (" << kvHeads * hd << ")";
  if (k[0] != q[0])
    return op->emitOpError()
           << "expects 'key' to have the batch size of 'query' (" << q[0]
           << "), got " << k[0];
  if (failed(checkShape(op, "value", value, k, "the shape of 'key'")))
    return failure();
  if (causal && k[1] != q[1])
    return op->emitOpError()
           << "expects equal query and key lengths with a causal mask, got "
           << q[1] << " and " << k[1];
  if (!segments)
    return success();
  if (k[1] != q[1])
    return op->emitOpError()
           << "expects equal query and key lengths with segments, got " << q[1]
           << " and " << k[1];
  if (shapeOf(segments) != q.take_front(2))
    return op->emitOpError()
           << "expects 'segments' of shape [" << q.take_front(2)
           << "] (batch, seq), got [" << shapeOf(segments) << "]";
  return success();
}

LogicalResult infir2::detail::checkSameType(Operation *op, StringRef name,
                                            Value v, StringRef refName,
                                            Value ref) {
  if (v.getType() == ref.getType())
    return success();
  return op->emitOpError() << "expects the type of '" << name
                           << "' to be the type of '" << refName << "' ("
                           << ref.getType() << "), got " << v.getType();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyAttention(*this, getQuery(), getKey(), getValue(),
                             getSegments(), getNumHeads(), getNumKvHeads(),
                             getHeadDim(), getCausal())))
    return failure();
  return checkSameType(*this, "result", getResult(), "query", getQuery());
}

//===----------------------------------------------------------------------===//
// AddOp / MulOp
//===----------------------------------------------------------------------===//

static LogicalResult verifyBroadcastBinary(Operation *op, Value lhs,
                                           Value rhs) {
  ArrayRef<int64_t> l = shapeOf(lhs), r = shapeOf(rhs);
  if (r.size() > l.size() || l.take_back(r.size()) != r)
    return op->emitOpError() << "expects the shape of 'rhs' "
                             << "[" << r << "]"
                             << " to equal the shape of 'lhs' "
                             << "[" << l << "]"
                             << " or a suffix of it";
  return checkSameElementType(op, "rhs", rhs, "lhs", lhs);
}

LogicalResult AddOp::verify() {
  return verifyBroadcastBinary(*this, getLhs(), getRhs());
}
LogicalResult MulOp::verify() {
  return verifyBroadcastBinary(*this, getLhs(), getRhs());
}

//===----------------------------------------------------------------------===//
// CrossEntropyOp
//===----------------------------------------------------------------------===//

LogicalResult infir2::detail::verifyCrossEntropy(Operation *op, Value logitsV,
                                                 Value targets, Value mask) {
  ArrayRef<int64_t> logits = shapeOf(logitsV);
  if (logits.size() < 2)
    return op->emitOpError() << "expects 'logits' of rank at least 2 ([..., "
                                "vocab]), got shape ["
                             << logits << "]";
  if (failed(checkShape(op, "targets", targets, logits.drop_back(),
                        "the shape of 'logits' without the vocabulary")))
    return failure();
  if (mask && failed(checkShape(op, "loss_mask", mask, logits.drop_back(),
                                "the shape of 'targets'")))
    return failure();
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  return verifyCrossEntropy(*this, getLogits(), getTargets(), getLossMask());
}

//===----------------------------------------------------------------------===//
// ConvertOp / ReduceSumOp
//===----------------------------------------------------------------------===//

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

LogicalResult ReduceSumOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getResult());
  if (out.size() > in.size() || in.take_back(out.size()) != out)
    return emitOpError() << "expects the result shape [" << out
                         << "] to be a suffix of the input shape [" << in
                         << "]";
  if (getAcc())
    return verifyAccumulator(*this, getAcc(), getResult());
  return checkSameElementType(*this, "result", getResult(), "input",
                              getInput());
}

OpFoldResult ReduceSumOp::fold(FoldAdaptor) {
  if (!getAcc() && getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (in.getNumElements() != out.getNumElements())
    return emitOpError() << "expects the result to have as many elements as "
                            "'input' ("
                         << in.getNumElements() << "), got "
                         << out.getNumElements();
  return checkSameElementType(*this, "result", getResult(), "input",
                              getInput());
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput());
  ArrayRef<int64_t> perm = getPermutation();
  if (perm.size() != in.size())
    return emitOpError() << "expects a permutation of " << in.size()
                         << " dimensions, got " << perm.size();
  SmallVector<bool> seen(in.size(), false);
  SmallVector<int64_t> expected;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(in.size()) || seen[p])
      return emitOpError()
             << "expects 'permutation' to be a permutation of [0, " << in.size()
             << "), got "
             << "[" << perm << "]";
    seen[p] = true;
    expected.push_back(in[p]);
  }
  if (failed(checkShape(*this, "result", getResult(), expected,
                        "the input's shape permuted")))
    return failure();
  return checkSameElementType(*this, "result", getResult(), "input",
                              getInput());
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getInput();
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    // result[i] = inner.input[innerPerm[perm[i]]].
    ArrayRef<int64_t> innerPerm = inner.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(innerPerm[p]);
    getInputMutable().assign(inner.getInput());
    setPermutation(composed);
    return getResult();
  }
  return {};
}

#include "Infir2Directives.h"

#define GET_OP_CLASSES
#include "infir2/Dialect/Infir2/IR/Infir2Ops.cpp.inc"
