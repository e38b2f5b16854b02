//===- Infir2Directives.h - Custom directives of the ops' formats -*- C++
//-*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The `custom<...>` directives of the assembly formats in the .td files,
// included by Infir2Ops.cpp before the generated op classes.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_INFIR2_IR_INFIR2DIRECTIVES_H
#define INFIR2_DIALECT_INFIR2_IR_INFIR2DIRECTIVES_H

#include "mlir/IR/OpImplementation.h"

namespace infir2 {

/// The grads', moments' and updated tensors' types of an adamw_group: the
/// parameters' types, written once.
static mlir::ParseResult
parseSameTypes(mlir::OpAsmParser &, llvm::ArrayRef<mlir::Type> params,
               llvm::SmallVectorImpl<mlir::Type> &grads,
               llvm::SmallVectorImpl<mlir::Type> &moments1,
               llvm::SmallVectorImpl<mlir::Type> &moments2,
               llvm::SmallVectorImpl<mlir::Type> &newParams,
               llvm::SmallVectorImpl<mlir::Type> &newMoments1,
               llvm::SmallVectorImpl<mlir::Type> &newMoments2) {
  for (llvm::SmallVectorImpl<mlir::Type> *types :
       {&grads, &moments1, &moments2, &newParams, &newMoments1, &newMoments2})
    types->assign(params.begin(), params.end());
  return mlir::success();
}

static void printSameTypes(mlir::OpAsmPrinter &, mlir::Operation *,
                           mlir::TypeRange, mlir::TypeRange, mlir::TypeRange,
                           mlir::TypeRange, mlir::TypeRange, mlir::TypeRange,
                           mlir::TypeRange) {}

/// A result whose type is an operand's unless `-> type` follows (cross-
/// entropy's gradient: the logits' type, or a narrower one).
static mlir::ParseResult parseResultTypeIfOther(mlir::OpAsmParser &parser,
                                                mlir::Type operand,
                                                mlir::Type &result) {
  if (mlir::succeeded(parser.parseOptionalArrow()))
    return parser.parseType(result);
  result = operand;
  return mlir::success();
}

static void printResultTypeIfOther(mlir::OpAsmPrinter &printer,
                                   mlir::Operation *, mlir::Type operand,
                                   mlir::Type result) {
  if (result != operand)
    printer << " -> " << result;
}

} // namespace infir2

#endif // INFIR2_DIALECT_INFIR2_IR_INFIR2DIRECTIVES_H
