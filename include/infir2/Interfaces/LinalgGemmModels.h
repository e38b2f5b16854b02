//===- LinalgGemmModels.h - GemmOpInterface for linalg ----------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_INTERFACES_LINALGGEMMMODELS_H
#define INFIR2_INTERFACES_LINALGGEMMMODELS_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace infir2 {

/// Attaches infir2::GemmOpInterface to linalg.matmul and linalg.batch_matmul,
/// so that the FP8 recipe passes work on linalg graphs, and to
/// fp8.scaled_matmul, so that they still see GEMMs once quantized; and
/// infir2::AccumulatingOpInterface to fp8.scaled_matmul, so that its weight
/// gradients add into their FP32 accumulators as infir2.matmul's do.
void registerLinalgGemmModels(mlir::DialectRegistry &registry);

} // namespace infir2

#endif // INFIR2_INTERFACES_LINALGGEMMMODELS_H
