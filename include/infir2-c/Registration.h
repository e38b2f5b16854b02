//===- infir2-c/Registration.h - Register InfiR2 from C ---------*- C -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// What infir2-opt registers, for C callers: the dialects (InfiR2's and the
// upstream ones its IR uses, not all of MLIR's) and the passes and pipelines
// for mlirParsePassPipeline.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_C_REGISTRATION_H
#define INFIR2_C_REGISTRATION_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Adds infir2, fp8 and infir2rt, the upstream dialects InfiR2's IR uses
/// (func, arith, tensor, linalg, bufferization, llvm) and the GemmOpInterface
/// models of linalg's GEMMs to `registry` (infir2::registerAllDialects).
MLIR_CAPI_EXPORTED void infir2RegisterAllDialects(MlirDialectRegistry registry);

/// Registers InfiR2's passes, its pipelines (fp8-recipe, bf16-recipe,
/// infir2-trainer) and canonicalize, cse, symbol-dce and print-op-stats in
/// MLIR's global pass registry (infir2::registerAllPasses). Calling it again
/// does nothing.
MLIR_CAPI_EXPORTED void infir2RegisterAllPasses(void);

#ifdef __cplusplus
}
#endif

#endif // INFIR2_C_REGISTRATION_H
