//===- RecipeUtils.h - Queries shared by the FP8 recipe passes --*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_LIB_TRANSFORMS_RECIPEUTILS_H
#define INFIR2_LIB_TRANSFORMS_RECIPEUTILS_H

#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSet.h"

#include <optional>

namespace infir2::recipe {

/// The parameter name of `v` if it is a parameter argument of its function.
std::optional<llvm::StringRef> paramName(mlir::Value v);

/// Whether `v` reaches a cross_entropy's logits through layout-only ops:
/// `v` is the LM head's output.
bool feedsLogits(mlir::Value v);

/// The weights of `fn`'s LM head GEMMs (those whose output is the logits).
/// Gradient GEMMs tagged with one of these weights belong to the LM head too.
llvm::StringSet<> lmHeadWeights(mlir::FunctionOpInterface fn);

/// Whether `gemm` is part of the LM head (forward or backward), given the
/// LM head's weights.
bool isLMHead(GemmOpInterface gemm, const llvm::StringSet<> &lmHead);

/// Replaces `gemm` with an fp8.scaled_matmul of the K-last FP8 operands
/// (`lhs`, `lhsScale` by `lhsGranularity`; same for rhs), built before it in
/// the GEMM's result type. The GEMM's discardable attributes move over; a
/// linalg GEMM's init is added back unless it is a zero fill.
fp8::ScaledMatmulOp replaceWithScaledMatmul(
    GemmOpInterface gemm, mlir::Value lhs, mlir::Value lhsScale,
    fp8::GranularityAttrInterface lhsGranularity, mlir::Value rhs,
    mlir::Value rhsScale, fp8::GranularityAttrInterface rhsGranularity);

} // namespace infir2::recipe

#endif // INFIR2_LIB_TRANSFORMS_RECIPEUTILS_H
