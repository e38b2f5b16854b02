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

#include "infir2/Dialect/Infir2/IR/Infir2Enums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h.inc"

#endif // INFIR2_DIALECT_INFIR2_IR_INFIR2ATTRS_H
