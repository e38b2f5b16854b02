//===- InitAll.h - Register InfiR2's dialects and passes --------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The one header a compiler embedding InfiR2 includes: what InfiR2
// registers, and (through Pipelines.h) the pipeline builders with their typed
// option structs. The tools (infir2-opt, infir2-compile, infir2-run,
// infir2-import), the plugin, the C API and the unit tests all call these, so
// they agree on what a pipeline may contain. Only the upstream dialects
// InfiR2 uses are registered: mlir/InitAllDialects.h costs a minute and
// gigabytes to compile.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_INITALL_H
#define INFIR2_INITALL_H

#include "infir2/Pipelines/Pipelines.h"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace infir2 {

/// Adds InfiR2's dialects (infir2, fp8, infir2rt), the upstream dialects its
/// pipelines read or produce (func, arith, tensor, linalg, bufferization,
/// LLVM) and the GemmOpInterface models of linalg's and fp8's GEMMs.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers InfiR2's passes and pipelines and the few generic upstream
/// transforms its tools offer (canonicalize, cse, symbol-dce,
/// print-op-stats) for use on the command line.
void registerAllPasses();

/// Registers InfiR2's own passes and pipelines only. The plugin for an
/// upstream mlir-opt calls this: that tool has the upstream passes already.
void registerInfiR2PassesAndPipelines();

} // namespace infir2

#endif // INFIR2_INITALL_H
