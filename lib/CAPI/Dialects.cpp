//===- Dialects.cpp - C API for InfiR2's dialects -------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2-c/Dialects.h"

#include "infir2/Dialect/FP8/IR/FP8Dialect.h"
#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/Dialect/Runtime/IR/RuntimeDialect.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Infir2, infir2, infir2::Infir2Dialect)
MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(FP8, fp8, infir2::fp8::FP8Dialect)
MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Infir2RT, infir2rt,
                                      infir2::rtir::RuntimeDialect)

Infir2GemmCounts infir2CountGemms(MlirOperation root) {
  Infir2GemmCounts counts = {0, 0};
  unwrap(root)->walk([&](mlir::Operation *op) {
    if (mlir::isa<infir2::fp8::ScaledMatmulOp>(op))
      ++counts.fp8;
    else if (mlir::isa<infir2::GemmOpInterface>(op))
      ++counts.highPrecision;
  });
  return counts;
}
