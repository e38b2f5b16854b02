//===- Infir2OpVerifiers.h - Checks shared by infir2 verifiers --*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The shape and type checks that the verifiers of several op families share:
// a model op and its *_grad op check the same operands, so both call one
// function. Internal to the dialect library.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_INFIR2_LIB_IR_INFIR2OPVERIFIERS_H
#define INFIR2_DIALECT_INFIR2_LIB_IR_INFIR2OPVERIFIERS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/APFloat.h"

#include <optional>

namespace infir2::detail {

inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType()).getShape();
}
inline mlir::Type elementTypeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType()).getElementType();
}
inline int64_t rankOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType()).getRank();
}

/// Checks that `actual` has shape `expected`; `why` explains where the
/// expected shape comes from.
mlir::LogicalResult checkShape(mlir::Operation *op, llvm::StringRef name,
                               mlir::Value actual,
                               llvm::ArrayRef<int64_t> expected,
                               llvm::StringRef why);

mlir::LogicalResult checkSameElementType(mlir::Operation *op,
                                         llvm::StringRef name, mlir::Value v,
                                         llvm::StringRef refName,
                                         mlir::Value ref);

/// Checks that `v` has the type of `ref`.
mlir::LogicalResult checkSameType(mlir::Operation *op, llvm::StringRef name,
                                  mlir::Value v, llvm::StringRef refName,
                                  mlir::Value ref);

/// Checks that an accumulator, when there is one, has the type of `result`,
/// which is f32, or with `orBF16` (a GEMM's: a sum rounded once) also bf16
/// (AccumulatingOpInterface).
mlir::LogicalResult verifyAccumulator(mlir::Operation *op, mlir::Value acc,
                                      mlir::Value result, bool orBF16 = false);

/// Checks the input and weight of `rms_norm` and `rms_norm_grad`.
mlir::LogicalResult verifyRMSNorm(mlir::Operation *op, mlir::Value input,
                                  mlir::Value weight);

/// Checks the rotated tensor (named `inputName`) and the positions of `rope`
/// and `rope_grad`.
mlir::LogicalResult verifyRope(mlir::Operation *op, mlir::Value input,
                               llvm::StringRef inputName, mlir::Value positions,
                               int64_t headDim);

/// The softmax scale of `attention` and `attention_grad`: `scale`, or
/// 1/sqrt(headDim) when it is absent.
double effectiveScale(std::optional<llvm::APFloat> scale, int64_t headDim);

/// Checks query, key, value and the optional segments of `attention` and
/// `attention_grad`.
mlir::LogicalResult verifyAttention(mlir::Operation *op, mlir::Value query,
                                    mlir::Value key, mlir::Value value,
                                    mlir::Value segments, int64_t heads,
                                    int64_t kvHeads, int64_t hd, bool causal);

/// Checks the logits, targets and optional mask of `cross_entropy` and
/// `cross_entropy_grad`.
mlir::LogicalResult verifyCrossEntropy(mlir::Operation *op, mlir::Value logitsV,
                                       mlir::Value targets, mlir::Value mask);

} // namespace infir2::detail

#endif // INFIR2_DIALECT_INFIR2_LIB_IR_INFIR2OPVERIFIERS_H
