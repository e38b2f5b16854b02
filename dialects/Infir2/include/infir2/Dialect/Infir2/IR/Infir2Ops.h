//===- Infir2Ops.h - Operations of the infir2 dialect -----------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_INFIR2_IR_INFIR2OPS_H
#define INFIR2_DIALECT_INFIR2_IR_INFIR2OPS_H

#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace infir2 {

/// Returns the result shape of `infir2.matmul` for the given operand shapes
/// and transpose flags, or a diagnostic (through `emitError`) naming what does
/// not fit. Shared by the verifier and by code that builds matmuls.
llvm::FailureOr<llvm::SmallVector<int64_t>>
inferMatmulShape(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs,
                 bool transposeLhs, bool transposeRhs,
                 llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

} // namespace infir2

#include "infir2/Dialect/Infir2/IR/Infir2Interfaces.h.inc"

namespace infir2 {

/// The sizes of a GEMM: batch (the product of leading dimensions), M, N, K.
struct GemmDims {
  int64_t batch, m, n, k;
};

/// The sizes of `gemm`, from its operand shapes and layouts.
GemmDims getGemmDims(GemmOpInterface gemm);

} // namespace infir2

#define GET_OP_CLASSES
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h.inc"

#endif // INFIR2_DIALECT_INFIR2_IR_INFIR2OPS_H
