//===- RuntimeDialect.h - Planned steps as runtime calls --------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_RUNTIME_IR_RUNTIMEDIALECT_H
#define INFIR2_DIALECT_RUNTIME_IR_RUNTIMEDIALECT_H

#include "mlir/IR/Dialect.h"

#include "infir2/Dialect/Runtime/IR/RuntimeDialect.h.inc"

#endif // INFIR2_DIALECT_RUNTIME_IR_RUNTIMEDIALECT_H
