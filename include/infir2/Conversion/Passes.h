//===- Passes.h - From a planned step to the LLVM dialect -------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_CONVERSION_PASSES_H
#define INFIR2_CONVERSION_PASSES_H

#include "infir2/Dialect/Runtime/IR/RuntimeDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace infir2 {

#define GEN_PASS_DECL
#include "infir2/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "infir2/Conversion/Passes.h.inc"

} // namespace infir2

#endif // INFIR2_CONVERSION_PASSES_H
