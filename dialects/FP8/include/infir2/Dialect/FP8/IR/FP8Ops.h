//===- FP8Ops.h - Operations of the fp8 dialect -----------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_FP8_IR_FP8OPS_H
#define INFIR2_DIALECT_FP8_IR_FP8OPS_H

#include "infir2/Dialect/FP8/IR/FP8Attrs.h"
#include "infir2/Dialect/FP8/IR/FP8Dialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "infir2/Dialect/FP8/IR/FP8Ops.h.inc"

#endif // INFIR2_DIALECT_FP8_IR_FP8OPS_H
