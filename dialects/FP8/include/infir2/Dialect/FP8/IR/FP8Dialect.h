//===- FP8Dialect.h - The fp8 quantization dialect --------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_FP8_IR_FP8DIALECT_H
#define INFIR2_DIALECT_FP8_IR_FP8DIALECT_H

#include "mlir/IR/Dialect.h"

#include "infir2/Dialect/FP8/IR/FP8Dialect.h.inc"

#endif // INFIR2_DIALECT_FP8_IR_FP8DIALECT_H
