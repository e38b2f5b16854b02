//===- RuntimeCallModels.h - The runtime call each op becomes ---*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_CONVERSION_RUNTIMECALLMODELS_H
#define INFIR2_CONVERSION_RUNTIMECALLMODELS_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace infir2 {

/// Attaches rtir::RuntimeCallOpInterface to every op of the infir2 and fp8
/// dialects that has a runtime entry point, and to arith.constant (a splat
/// is a fill). registerAllDialects calls it, and --infir2-lower-to-runtime
/// adds it to the registry of any context it runs in.
void registerRuntimeCallModels(mlir::DialectRegistry &registry);

} // namespace infir2

#endif // INFIR2_CONVERSION_RUNTIMECALLMODELS_H
