//===- FP8Ops.cpp - Verifiers of fp8 ops ----------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/FP8/IR/FP8Ops.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace infir2::fp8;

namespace {
RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Checks that `scale` has the shape `granularity` implies for `data`, whose
/// operand names appear in the diagnostics.
LogicalResult verifyScale(Operation *op, StringRef dataName, Value data,
                          StringRef scaleName, Value scale,
                          GranularityAttrInterface granularity) {
  ArrayRef<int64_t> shape = tensorOf(data).getShape();
  FailureOr<SmallVector<int64_t>> expected =
      getScaleShape(granularity, shape, [&] {
        return op->emitOpError() << "'" << dataName << "': ";
      });
  if (failed(expected))
    return failure();
  ArrayRef<int64_t> actual = tensorOf(scale).getShape();
  if (actual != ArrayRef<int64_t>(*expected))
    return op->emitOpError() << "expects '" << scaleName << "' of shape "
                             << "[" << *expected << "]"
                             << " (one scale per " << granularity
                             << " block of '" << dataName << "' "
                             << "[" << shape << "]"
                             << "), got "
                             << "[" << actual << "]";
  return success();
}
/// Checks that `scale` has the element type `granularity` fixes, if any (MX
/// blocks carry E8M0 scales).
LogicalResult verifyScaleType(Operation *op, StringRef scaleName, Value scale,
                              GranularityAttrInterface granularity) {
  Type want = granularity.getScaleElementType();
  Type got = tensorOf(scale).getElementType();
  if (isa<Float32Type>(want) || got == want)
    return success();
  return op->emitOpError() << "expects '" << scaleName << "' of element type "
                           << want << " (" << granularity
                           << " blocks carry E8M0 scales), got " << got;
}

/// Checks `scale`'s shape and element type against `granularity`.
LogicalResult verifyScales(Operation *op, StringRef dataName, Value data,
                           StringRef scaleName, Value scale,
                           GranularityAttrInterface granularity) {
  if (failed(verifyScale(op, dataName, data, scaleName, scale, granularity)))
    return failure();
  return verifyScaleType(op, scaleName, scale, granularity);
}

/// Checks the element type of `data` against `format` and the scale type
/// against `rule`.
LogicalResult verifyFormat(Operation *op, StringRef dataName, Value data,
                           Value scale, Format format, ScaleRule rule) {
  Type expectedElt = getElementType(op->getContext(), format);
  if (tensorOf(data).getElementType() != expectedElt)
    return op->emitOpError()
           << "expects '" << dataName << "' of element type " << expectedElt
           << " for format " << stringifyFormat(format) << ", got "
           << tensorOf(data).getElementType();
  if (isa<Float8E8M0FNUType>(tensorOf(scale).getElementType()) &&
      rule == ScaleRule::fp32)
    return op->emitOpError()
           << "expects f32 scales with scale rule " << stringifyScaleRule(rule)
           << " (f8E8M0FNU holds only powers of two)";
  return success();
}

} // namespace

LogicalResult QuantizeOp::verify() {
  RankedTensorType in = tensorOf(getInput()), data = tensorOf(getData());
  if (data.getShape() != in.getShape())
    return emitOpError() << "expects 'data' to have the shape of 'input' "
                         << "[" << in.getShape() << "]"
                         << ", got "
                         << "[" << data.getShape() << "]";
  if (failed(verifyFormat(*this, "data", getData(), getScale(), getFormat(),
                          getScaleRule())))
    return failure();
  return verifyScales(*this, "input", getInput(), "scale", getScale(),
                      getGranularity());
}

LogicalResult QuantizeDualOp::verify() {
  ArrayRef<int64_t> in = tensorOf(getInput()).getShape();
  if (in.size() < 2)
    return emitOpError() << "expects 'input' of rank at least 2 (it has a "
                            "transposed copy), got shape "
                         << "[" << in << "]";
  ArrayRef<int64_t> data = tensorOf(getData()).getShape();
  if (data != in)
    return emitOpError() << "expects 'data' to have the shape of 'input' "
                         << "[" << in << "]"
                         << ", got "
                         << "[" << data << "]";
  SmallVector<int64_t> transposed = {
      in.back(), ShapedType::getNumElements(in.drop_back())};
  ArrayRef<int64_t> dataT = tensorOf(getDataT()).getShape();
  if (dataT != ArrayRef<int64_t>(transposed))
    return emitOpError() << "expects 'data_t' of shape "
                         << "[" << transposed << "]"
                         << " (the transpose of 'input' viewed as [T, K]), "
                            "got "
                         << "[" << dataT << "]";
  if (failed(verifyFormat(*this, "data", getData(), getScale(), getFormat(),
                          getScaleRule())) ||
      failed(verifyFormat(*this, "data_t", getDataT(), getScaleT(), getFormat(),
                          getScaleRule())) ||
      failed(verifyScales(*this, "data", getData(), "scale", getScale(),
                          getGranularity())))
    return failure();
  return verifyScales(*this, "data_t", getDataT(), "scale_t", getScaleT(),
                      getTransposedGranularity());
}

LogicalResult FusedOp::verify() {
  Block &body = getBody().front();
  auto yield = body.empty() ? YieldOp() : dyn_cast<YieldOp>(body.back());
  if (!yield)
    return emitOpError() << "expects its body to end with fp8.yield";
  Operation *producer = &body.front();
  if (producer == yield)
    return emitOpError() << "expects a producer op and its quantizations, "
                            "got an empty body";
  if (isa<QuantizeOp, QuantizeDualOp>(producer))
    return emitOpError() << "expects its body to begin with the producer, "
                            "not a quantization";
  if (producer->getNumResults() != 1)
    return emitOpError() << "expects a producer of one result, got '"
                         << producer->getName() << "' with "
                         << producer->getNumResults();
  int64_t quantizations = 0;
  for (Operation &op : llvm::drop_begin(body.without_terminator())) {
    if (!isa<QuantizeOp, QuantizeDualOp>(op) ||
        op.getOperand(0) != producer->getResult(0))
      return op.emitOpError() << "in an fp8.fused body must be a quantization "
                                 "of the producer's result";
    ++quantizations;
  }
  if (quantizations == 0)
    return emitOpError() << "fuses no quantization into '"
                         << producer->getName() << "'";
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "yields " << yield.getValues().size()
                         << " value(s) whose types do not match its "
                         << getNumResults() << " result(s)";
  return success();
}

LogicalResult DequantizeOp::verify() {
  RankedTensorType data = tensorOf(getData()), out = tensorOf(getResult());
  if (out.getShape() != data.getShape())
    return emitOpError() << "expects the result to have the shape of 'data' "
                         << "[" << data.getShape() << "]"
                         << ", got "
                         << "[" << out.getShape() << "]";
  return verifyScales(*this, "data", getData(), "scale", getScale(),
                      getGranularity());
}

LogicalResult ScaledMatmulOp::verify() {
  ArrayRef<int64_t> lhs = tensorOf(getLhs()).getShape();
  ArrayRef<int64_t> rhs = tensorOf(getRhs()).getShape();
  if (lhs.size() < 2)
    return emitOpError() << "expects 'lhs' of rank at least 2 ([..., M, K]), "
                            "got shape "
                         << "[" << lhs << "]";
  if (rhs.size() != 2 && rhs.size() != lhs.size())
    return emitOpError() << "expects 'rhs' of rank 2 or of the rank of 'lhs' ("
                         << lhs.size() << "), got shape "
                         << "[" << rhs << "]";
  size_t batchRank = lhs.size() - 2;
  if (rhs.size() == lhs.size() &&
      lhs.take_front(batchRank) != rhs.take_front(batchRank))
    return emitOpError() << "expects equal batch dimensions, got 'lhs' "
                         << "[" << lhs << "]"
                         << " and 'rhs' "
                         << "[" << rhs << "]";
  if (lhs.back() != rhs.back())
    return emitOpError()
           << "expects 'lhs' [..., M, K] and 'rhs' [..., N, K] to "
              "share the contraction dimension K (last), got "
           << lhs.back() << " and " << rhs.back();
  SmallVector<int64_t> expected(lhs.drop_back());
  expected.push_back(rhs[rhs.size() - 2]);
  ArrayRef<int64_t> out = tensorOf(getResult()).getShape();
  if (out != ArrayRef<int64_t>(expected))
    return emitOpError() << "expects a result of shape "
                         << "[" << expected << "]"
                         << " ([..., M, N]), got "
                         << "[" << out << "]";
  if (failed(verifyScales(*this, "lhs", getLhs(), "lhs_scale", getLhsScale(),
                          getLhsGranularity())) ||
      failed(verifyScales(*this, "rhs", getRhs(), "rhs_scale", getRhsScale(),
                          getRhsGranularity())))
    return failure();
  // An MX GEMM scales both operands by 32 elements of K (the MXFP8 mode of
  // Blackwell's tensor cores): blocks along any other dimension, or one
  // operand in MX blocks and the other not, have no such GEMM.
  auto lhsMx = dyn_cast<MxAttr>(getLhsGranularity());
  auto rhsMx = dyn_cast<MxAttr>(getRhsGranularity());
  if (bool(lhsMx) != bool(rhsMx))
    return emitOpError() << "expects both operands in #fp8.mx blocks or "
                            "neither, got "
                         << getLhsGranularity() << " and "
                         << getRhsGranularity();
  for (auto [name, mx, rank] :
       {std::tuple<StringRef, MxAttr, size_t>{"lhs", lhsMx, lhs.size()},
        {"rhs", rhsMx, rhs.size()}})
    if (mx && mx.getDim() != static_cast<int64_t>(rank) - 1)
      return emitOpError() << "expects the #fp8.mx blocks of '" << name
                           << "' along its contraction dimension K ("
                           << rank - 1
                           << ", the last), got dim = " << mx.getDim();
  // An accumulator, when there is one, has the result's type (f32 or bf16:
  // the product added before the one rounding).
  if (Value acc = getAcc())
    if (acc.getType() != getResult().getType())
      return emitOpError()
             << "expects the accumulator 'acc' to have the result's type "
             << getResult().getType() << ", got " << acc.getType();
  return success();
}

LogicalResult AmaxOp::verify() {
  return verifyScale(*this, "input", getInput(), "result", getResult(),
                     getGranularity());
}

#define GET_OP_CLASSES
#include "infir2/Dialect/FP8/IR/FP8Ops.cpp.inc"
