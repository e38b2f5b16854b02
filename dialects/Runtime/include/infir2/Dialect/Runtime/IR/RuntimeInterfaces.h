//===- RuntimeInterfaces.h - Ops that become runtime calls ------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_RUNTIME_IR_RUNTIMEINTERFACES_H
#define INFIR2_DIALECT_RUNTIME_IR_RUNTIMEINTERFACES_H

#include "mlir/IR/OpDefinition.h"

#include <optional>
#include <string>
#include <vector>

namespace infir2::rtir {

/// One runtime call: the entry point, the values whose buffers it takes (in
/// the entry's order) and its attribute words (the entry's struct of
/// runtime/include/infir2/runtime/Attributes.h, encoded).
struct RuntimeCall {
  /// Empty for an op that is a view of its input (it has no code).
  std::string entry;
  llvm::SmallVector<mlir::Value> operands;
  std::vector<double> attrs;

  bool isView() const { return entry.empty(); }
};

} // namespace infir2::rtir

#include "infir2/Dialect/Runtime/IR/RuntimeInterfaces.h.inc"

#endif // INFIR2_DIALECT_RUNTIME_IR_RUNTIMEINTERFACES_H
