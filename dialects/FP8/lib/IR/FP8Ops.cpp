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
} // namespace

LogicalResult QuantizeOp::verify() {
  RankedTensorType in = tensorOf(getInput()), data = tensorOf(getData());
  if (data.getShape() != in.getShape())
    return emitOpError() << "expects 'data' to have the shape of 'input' "
                         << "[" << in.getShape() << "]"
                         << ", got "
                         << "[" << data.getShape() << "]";
  Type expectedElt = getElementType(getContext(), getFormat());
  if (data.getElementType() != expectedElt)
    return emitOpError() << "expects 'data' of element type " << expectedElt
                         << " for format " << stringifyFormat(getFormat())
                         << ", got " << data.getElementType();
  if (isa<Float8E8M0FNUType>(tensorOf(getScale()).getElementType()) &&
      getScaleRule() != ScaleRule::pow2)
    return emitOpError() << "expects f32 scales with scale rule "
                         << stringifyScaleRule(getScaleRule())
                         << " (f8E8M0FNU holds only powers of two)";
  return verifyScale(*this, "input", getInput(), "scale", getScale(),
                     getGranularity());
}

LogicalResult DequantizeOp::verify() {
  RankedTensorType data = tensorOf(getData()), out = tensorOf(getResult());
  if (out.getShape() != data.getShape())
    return emitOpError() << "expects the result to have the shape of 'data' "
                         << "[" << data.getShape() << "]"
                         << ", got "
                         << "[" << out.getShape() << "]";
  return verifyScale(*this, "data", getData(), "scale", getScale(),
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
  if (failed(verifyScale(*this, "lhs", getLhs(), "lhs_scale", getLhsScale(),
                         getLhsGranularity())))
    return failure();
  return verifyScale(*this, "rhs", getRhs(), "rhs_scale", getRhsScale(),
                     getRhsGranularity());
}

LogicalResult AmaxOp::verify() {
  return verifyScale(*this, "input", getInput(), "result", getResult(),
                     getGranularity());
}

#define GET_OP_CLASSES
#include "infir2/Dialect/FP8/IR/FP8Ops.cpp.inc"
