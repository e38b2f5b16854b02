//===- FP8Attrs.h - Attributes of the fp8 dialect ---------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_FP8_IR_FP8ATTRS_H
#define INFIR2_DIALECT_FP8_IR_FP8ATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/SmallVector.h"

#include "infir2/Dialect/FP8/IR/FP8AttrInterfaces.h.inc"
#include "infir2/Dialect/FP8/IR/FP8Enums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "infir2/Dialect/FP8/IR/FP8Attrs.h.inc"

namespace infir2::fp8 {

/// Returns the shape of the scale tensor that `granularity` implies for data of
/// shape `shape`: `shape[i] / block[i]` in every dimension. Fails, with a
/// diagnostic through `emitError` naming the dimension, when the granularity
/// does not apply to that rank or a block does not divide its dimension.
llvm::FailureOr<llvm::SmallVector<int64_t>>
getScaleShape(GranularityAttrInterface granularity,
              llvm::ArrayRef<int64_t> shape,
              llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// The MLIR element type of an FP8 format (f8E4M3FN or f8E5M2).
mlir::FloatType getElementType(mlir::MLIRContext *ctx, Format format);

/// The largest finite magnitude of an FP8 format (448 or 57344).
double getMaxFinite(Format format);

} // namespace infir2::fp8

#endif // INFIR2_DIALECT_FP8_IR_FP8ATTRS_H
