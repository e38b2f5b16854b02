//===- infir2-c/Pipelines.h - Run InfiR2's pipelines from C -----*- C -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Each call runs one of InfiR2's pipelines on a module, built by the same
// builder as infir2-opt's --fp8-recipe, --bf16-recipe and --infir2-trainer.
// `options` is the text between the braces of the command line, e.g.
// "granularity=tensorwise format=hybrid" (empty: the defaults).
//
// Every problem, a bad option string included, is an MLIR diagnostic on the
// module's context (see mlirContextAttachDiagnosticHandler) and the call
// returns failure; nothing aborts or exits. A bad option string is caught
// before any pass runs and leaves the module as it was.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_C_PIPELINES_H
#define INFIR2_C_PIPELINES_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The InfiR2 FP8 recipe (--fp8-recipe): derives the training step if the
/// module has none, then puts its GEMMs in FP8 where the policy allows.
/// Options: granularity, format, scales, keep-first-last, min-gemm-flops,
/// cost-model, fuse-casts, and the training step's (optimizer, beta1, beta2,
/// eps, weight-decay, grad-clip, decay-1d, optimizer-state, data-parallel,
/// zero1, world-size).
MLIR_CAPI_EXPORTED MlirLogicalResult infir2RunFP8Recipe(MlirModule module,
                                                        MlirStringRef options);

/// The BF16 baseline (--bf16-recipe): the training step, every GEMM in high
/// precision. Options: the training step's.
MLIR_CAPI_EXPORTED MlirLogicalResult infir2RunBF16Recipe(MlirModule module,
                                                         MlirStringRef options);

/// The way from a model to the LLVM dialect (--infir2-trainer): a recipe,
/// memory planning, runtime calls, LLVM. Options: the FP8 recipe's, recipe
/// (fp8, bf16), stop-after (recipe, plan, runtime, llvm), report-memory.
MLIR_CAPI_EXPORTED MlirLogicalResult
infir2RunTrainerPipeline(MlirModule module, MlirStringRef options);

#ifdef __cplusplus
}
#endif

#endif // INFIR2_C_PIPELINES_H
