//===- infir2-c/Dialects.h - C API for InfiR2's dialects --------*- C -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Handles of InfiR2's three dialects, in MLIR's C-API style: register one
// with mlirDialectHandleInsertDialect, or everything InfiR2's IR needs with
// infir2RegisterAllDialects (infir2-c/Registration.h).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_C_DIALECTS_H
#define INFIR2_C_DIALECTS_H

#include <stdint.h>

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The model, gradient and optimizer ops (`infir2.matmul`, ...).
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Infir2, infir2);

/// FP8 values, scales and scaled GEMMs (`fp8.scaled_matmul`, ...).
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(FP8, fp8);

/// Calls into the InfiR2 runtime on planned buffers (`infir2rt.call`, ...).
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Infir2RT, infir2rt);

/// How many GEMMs `root` holds (itself included), by where they run.
typedef struct Infir2GemmCounts {
  /// `fp8.scaled_matmul`: the GEMMs the recipe put in FP8.
  intptr_t fp8;
  /// Every other GEMM (infir2.matmul, linalg.matmul, linalg.batch_matmul):
  /// kept in high precision, or not yet decided.
  intptr_t highPrecision;
} Infir2GemmCounts;

/// Counts the GEMMs (ops with InfiR2's GemmOpInterface) nested in `root`.
/// The linalg GEMMs count only where the context holds their interface
/// models (infir2RegisterAllDialects).
MLIR_CAPI_EXPORTED Infir2GemmCounts infir2CountGemms(MlirOperation root);

#ifdef __cplusplus
}
#endif

#endif // INFIR2_C_DIALECTS_H
