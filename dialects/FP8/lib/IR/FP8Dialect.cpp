//===- FP8Dialect.cpp - The fp8 dialect and its attributes ----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/FP8/IR/FP8Dialect.h"
#include "infir2/Dialect/FP8/IR/FP8Attrs.h"
#include "infir2/Dialect/FP8/IR/FP8Ops.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace infir2::fp8;

#include "infir2/Dialect/FP8/IR/FP8AttrInterfaces.cpp.inc"
#include "infir2/Dialect/FP8/IR/FP8Dialect.cpp.inc"
#include "infir2/Dialect/FP8/IR/FP8Enums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "infir2/Dialect/FP8/IR/FP8Attrs.cpp.inc"

void FP8Dialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "infir2/Dialect/FP8/IR/FP8Ops.cpp.inc"
      >();
  registerAttributes();
}

void FP8Dialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "infir2/Dialect/FP8/IR/FP8Attrs.cpp.inc"
      >();
}

LogicalResult FP8Dialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  if (attr.getName() != getDecisionAttrName())
    return op->emitError() << "unknown attribute '" << attr.getName().getValue()
                           << "' on '" << op->getName() << "'";
  if (!isa<DecisionAttr>(attr.getValue()))
    return op->emitError() << "'" << getDecisionAttrName()
                           << "' must be a #fp8.decision, got "
                           << attr.getValue();
  return success();
}

LogicalResult DecisionAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, Precision precision,
    GemmRole role, GranularityAttrInterface lhs, GranularityAttrInterface rhs,
    std::optional<Format> lhsFormat, std::optional<Format> rhsFormat,
    std::optional<ScaleRule> scales, StringRef reason) {
  bool complete = lhs && rhs && lhsFormat && rhsFormat && scales;
  bool none = !lhs && !rhs && !lhsFormat && !rhsFormat && !scales;
  if (precision == Precision::fp8 && !complete)
    return emitError() << "an fp8 decision names lhs, rhs, lhs_format, "
                          "rhs_format and scales";
  if (precision == Precision::high && !none)
    return emitError() << "a high-precision decision has no granularities, "
                          "formats or scales";
  if (reason.empty())
    return emitError() << "a decision states its reason";
  // MX blocks come in pairs, with power-of-two (E8M0) scales.
  if (precision == Precision::fp8 && (isa<MxAttr>(lhs) || isa<MxAttr>(rhs))) {
    if (!isa<MxAttr>(lhs) || !isa<MxAttr>(rhs))
      return emitError() << "an MX decision has both operands in #fp8.mx "
                            "blocks, got "
                         << lhs << " and " << rhs;
    if (*scales == ScaleRule::fp32)
      return emitError() << "an MX decision takes a power-of-two scale rule "
                            "(pow2 or floor): MX scales are E8M0, not fp32";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Formats
//===----------------------------------------------------------------------===//

FloatType infir2::fp8::getElementType(MLIRContext *ctx, Format format) {
  switch (format) {
  case Format::e4m3:
    return Float8E4M3FNType::get(ctx);
  case Format::e5m2:
    return Float8E5M2Type::get(ctx);
  }
  llvm_unreachable("unknown FP8 format");
}

double infir2::fp8::getMaxFinite(Format format) {
  switch (format) {
  case Format::e4m3:
    return 448.0;
  case Format::e5m2:
    return 57344.0;
  }
  llvm_unreachable("unknown FP8 format");
}

//===----------------------------------------------------------------------===//
// Granularities
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>>
TensorwiseAttr::getBlockShape(ArrayRef<int64_t> shape,
                              function_ref<InFlightDiagnostic()>) const {
  return SmallVector<int64_t>(shape);
}

LogicalResult GroupsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t size, int64_t dim) {
  if (size <= 0)
    return emitError() << "group size must be positive, got " << size;
  if (dim < 0)
    return emitError() << "group dimension must be non-negative, got " << dim;
  return success();
}

/// A block of `size` elements along dimension `dim` (a `what` of a
/// granularity), or an error when `shape` has no such dimension.
static FailureOr<SmallVector<int64_t>>
blockAlong(ArrayRef<int64_t> shape, int64_t dim, int64_t size, StringRef what,
           function_ref<InFlightDiagnostic()> emitError) {
  if (dim >= static_cast<int64_t>(shape.size())) {
    emitError() << what << " " << dim
                << " is out of range for a tensor of shape "
                << "[" << shape << "]";
    return failure();
  }
  SmallVector<int64_t> block(shape.size(), 1);
  block[dim] = size;
  return block;
}

FailureOr<SmallVector<int64_t>>
GroupsAttr::getBlockShape(ArrayRef<int64_t> shape,
                          function_ref<InFlightDiagnostic()> emitError) const {
  return blockAlong(shape, getDim(), getSize(), "group dimension", emitError);
}

LogicalResult BlocksAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0)
    return emitError() << "block sizes must be positive, got " << rows << "x"
                       << cols;
  return success();
}

FailureOr<SmallVector<int64_t>>
BlocksAttr::getBlockShape(ArrayRef<int64_t> shape,
                          function_ref<InFlightDiagnostic()> emitError) const {
  if (shape.size() < 2) {
    emitError() << "2-D blocks need a tensor of rank at least 2, got shape "
                << "[" << shape << "]";
    return failure();
  }
  SmallVector<int64_t> block(shape.size(), 1);
  block[shape.size() - 2] = getRows();
  block[shape.size() - 1] = getCols();
  return block;
}

LogicalResult MxAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                             int64_t dim) {
  if (dim < 0)
    return emitError() << "MX block dimension must be non-negative, got "
                       << dim;
  return success();
}

FailureOr<SmallVector<int64_t>>
MxAttr::getBlockShape(ArrayRef<int64_t> shape,
                      function_ref<InFlightDiagnostic()> emitError) const {
  return blockAlong(shape, getDim(), kBlockSize, "MX block dimension",
                    emitError);
}

Type MxAttr::getScaleElementType() const {
  return Float8E8M0FNUType::get(getContext());
}

FailureOr<SmallVector<int64_t>>
infir2::fp8::getScaleShape(GranularityAttrInterface granularity,
                           ArrayRef<int64_t> shape,
                           function_ref<InFlightDiagnostic()> emitError) {
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (d <= 0) {
      emitError() << "cannot scale a tensor with an empty dimension: dimension "
                  << i << " of shape "
                  << "[" << shape << "]"
                  << " has size " << d;
      return failure();
    }
  }
  FailureOr<SmallVector<int64_t>> block =
      granularity.getBlockShape(shape, emitError);
  if (failed(block))
    return failure();
  SmallVector<int64_t> scaleShape;
  for (auto [i, d] : llvm::enumerate(shape)) {
    int64_t b = (*block)[i];
    if (d % b != 0) {
      emitError() << granularity << " does not tile shape "
                  << "[" << shape << "]"
                  << ": block size " << b << " does not divide dimension " << i
                  << " (size " << d << ")";
      return failure();
    }
    scaleShape.push_back(d / b);
  }
  return scaleShape;
}
