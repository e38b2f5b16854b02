//===- Infir2Attrs.h - Attributes of the infir2 dialect ---------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_INFIR2_IR_INFIR2ATTRS_H
#define INFIR2_DIALECT_INFIR2_IR_INFIR2ATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "infir2/Dialect/Infir2/IR/Infir2Enums.h.inc"

#include <optional>

#define GET_ATTRDEF_CLASSES
#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h.inc"

namespace infir2 {

/// The trainable parameters of `fn` (arguments carrying `infir2.param`), as
/// (argument index, declaration) pairs in argument order.
llvm::SmallVector<std::pair<unsigned, ParamAttr>>
getParams(mlir::FunctionOpInterface fn);

/// The batch input an unannotated function argument is, from how the model
/// uses it: "input_ids" (an embedding's ids), "targets" or "loss_mask" (a
/// cross_entropy's, also through reshapes and slices: a loss computed in
/// chunks), "positions" (a rope's), "segments" (an attention's);
/// std::nullopt otherwise.
std::optional<llvm::StringRef> getBatchInputRole(mlir::BlockArgument arg);

/// The uses of `v` and, through infir2.reshape and infir2.slice, of its
/// views (not the views' own uses by those ops).
llvm::SmallVector<mlir::OpOperand *> getUsesThroughViews(mlir::Value v);

} // namespace infir2

#endif // INFIR2_DIALECT_INFIR2_IR_INFIR2ATTRS_H
