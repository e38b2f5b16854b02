//===- Passes.h - InfiR2's passes -------------------------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TRANSFORMS_PASSES_H
#define INFIR2_TRANSFORMS_PASSES_H

#include "infir2/Dialect/FP8/IR/FP8Dialect.h"
#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "infir2/Dialect/Runtime/IR/RuntimeDialect.h"
#include "infir2/Transforms/Options.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace infir2 {

#define GEN_PASS_DECL
#include "infir2/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "infir2/Transforms/Passes.h.inc"

/// Checks `fn`, one rank's forward of a tensor-parallel group of `size`,
/// as --infir2-verify-tensor-parallel does; emits an error at the first op
/// where sharded and whole values meet without a collective.
mlir::LogicalResult verifyTensorParallel(mlir::func::FuncOp fn, int64_t size);
/// Sequence parallelism on a forward `--infir2-tensor-parallel` has sharded
/// over `size` ranks: the norms and residual adds between the regions on
/// each rank's slice of the sequence (SequenceParallel.cpp).
mlir::LogicalResult splitSequence(mlir::func::FuncOp fn, int64_t size);

} // namespace infir2

#endif // INFIR2_TRANSFORMS_PASSES_H
