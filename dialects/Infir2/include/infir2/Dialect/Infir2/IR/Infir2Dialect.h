//===- Infir2Dialect.h - The infir2 model-level dialect ---------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_INFIR2_IR_INFIR2DIALECT_H
#define INFIR2_DIALECT_INFIR2_IR_INFIR2DIALECT_H

#include "mlir/IR/Dialect.h"

#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h.inc"

#endif // INFIR2_DIALECT_INFIR2_IR_INFIR2DIALECT_H
