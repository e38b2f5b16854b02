//===- RuntimeAttrs.h - Buffers of a planned step ---------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_RUNTIME_IR_RUNTIMEATTRS_H
#define INFIR2_DIALECT_RUNTIME_IR_RUNTIMEATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include "infir2/Dialect/Runtime/IR/RuntimeEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "infir2/Dialect/Runtime/IR/RuntimeAttrs.h.inc"

#endif // INFIR2_DIALECT_RUNTIME_IR_RUNTIMEATTRS_H
