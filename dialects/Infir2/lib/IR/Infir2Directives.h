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

/// `moments bf16` after an update's types, or nothing: the element type of
/// AdamW's moments, when it is not the parameters' (FP32).
static mlir::ParseResult parseMomentElementType(mlir::OpAsmParser &parser,
                                                mlir::Type param,
                                                mlir::Type &element) {
  auto shaped = mlir::dyn_cast<mlir::ShapedType>(param);
  if (!shaped)
    return parser.emitError(parser.getCurrentLocation(),
                            "expects tensor parameters, got ")
           << param;
  element = shaped.getElementType();
  if (mlir::failed(parser.parseOptionalKeyword("moments")))
    return mlir::success();
  return parser.parseType(element);
}

static void printMomentElementType(mlir::OpAsmPrinter &printer,
                                   mlir::Type param, mlir::Type moment) {
  mlir::Type element = mlir::cast<mlir::ShapedType>(moment).getElementType();
  if (element != mlir::cast<mlir::ShapedType>(param).getElementType())
    printer << " moments " << element;
}

/// adamw's moments' type: the parameter's, or with `moments bf16` the
/// parameter's shape in BF16.
static mlir::ParseResult parseMomentType(mlir::OpAsmParser &parser,
                                         mlir::Type param, mlir::Type &moment) {
  mlir::Type element;
  if (parseMomentElementType(parser, param, element))
    return mlir::failure();
  moment = mlir::cast<mlir::ShapedType>(param).clone(element);
  return mlir::success();
}

static void printMomentType(mlir::OpAsmPrinter &printer, mlir::Operation *,
                            mlir::Type param, mlir::Type moment) {
  printMomentElementType(printer, param, moment);
}

/// The grads', moments' and updated tensors' types of an adamw_group: the
/// parameters' types, written once, the moments' with `moments bf16` in
/// that element type.
static mlir::ParseResult
parseSameTypes(mlir::OpAsmParser &parser, llvm::ArrayRef<mlir::Type> params,
               llvm::SmallVectorImpl<mlir::Type> &grads,
               llvm::SmallVectorImpl<mlir::Type> &moments1,
               llvm::SmallVectorImpl<mlir::Type> &moments2,
               llvm::SmallVectorImpl<mlir::Type> &newParams,
               llvm::SmallVectorImpl<mlir::Type> &newMoments1,
               llvm::SmallVectorImpl<mlir::Type> &newMoments2) {
  if (params.empty())
    return parser.emitError(parser.getCurrentLocation(),
                            "expects at least one parameter");
  mlir::Type element;
  if (parseMomentElementType(parser, params.front(), element))
    return mlir::failure();
  for (llvm::SmallVectorImpl<mlir::Type> *types : {&grads, &newParams})
    types->assign(params.begin(), params.end());
  for (llvm::SmallVectorImpl<mlir::Type> *types :
       {&moments1, &moments2, &newMoments1, &newMoments2}) {
    types->clear();
    for (mlir::Type p : params) {
      auto shaped = mlir::dyn_cast<mlir::ShapedType>(p);
      if (!shaped)
        return parser.emitError(parser.getCurrentLocation(),
                                "expects tensor parameters, got ")
               << p;
      types->push_back(shaped.clone(element));
    }
  }
  return mlir::success();
}

static void printSameTypes(mlir::OpAsmPrinter &printer, mlir::Operation *,
                           mlir::TypeRange params, mlir::TypeRange,
                           mlir::TypeRange moments1, mlir::TypeRange,
                           mlir::TypeRange, mlir::TypeRange, mlir::TypeRange) {
  if (!params.empty() && !moments1.empty())
    printMomentElementType(printer, params.front(), moments1.front());
}

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
