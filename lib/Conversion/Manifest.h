//===- Manifest.h - The manifest a compiled trainer embeds ------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_LIB_CONVERSION_MANIFEST_H
#define INFIR2_LIB_CONVERSION_MANIFEST_H

#include "infir2/Dialect/Runtime/IR/RuntimeAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace infir2 {

/// The manifest of a planned module (its #infir2rt.plan and the planned
/// functions), as JSON: what the trainer reads at start-up to lay out its
/// state, with the runtime ABI version it was compiled for.
mlir::FailureOr<std::string>
buildManifest(rtir::PlanAttr plan,
              llvm::ArrayRef<mlir::func::FuncOp> planned);

} // namespace infir2

#endif // INFIR2_LIB_CONVERSION_MANIFEST_H
