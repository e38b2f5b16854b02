//===- RuntimeOps.h - Calls of runtime entry points -------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_RUNTIME_IR_RUNTIMEOPS_H
#define INFIR2_DIALECT_RUNTIME_IR_RUNTIMEOPS_H

#include "infir2/Dialect/Runtime/IR/RuntimeAttrs.h"
#include "infir2/Dialect/Runtime/IR/RuntimeDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/OpDefinition.h"

#define GET_OP_CLASSES
#include "infir2/Dialect/Runtime/IR/RuntimeOps.h.inc"

#endif // INFIR2_DIALECT_RUNTIME_IR_RUNTIMEOPS_H
