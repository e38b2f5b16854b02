//===- RuntimeCalls.h - The runtime call each op becomes --------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_LIB_CONVERSION_RUNTIMECALLS_H
#define INFIR2_LIB_CONVERSION_RUNTIMECALLS_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>
#include <vector>

namespace infir2 {

/// One runtime call: the entry point, operands (values, to be given their
/// buffers) and attribute words (runtime/include/infir2/runtime/
/// Attributes.h encodes them from the entry's struct).
struct CallSpec {
  std::string entry;
  llvm::SmallVector<mlir::Value> operands;
  std::vector<double> attrs;
};

/// The runtime call `op` becomes; std::nullopt for ops with no code (a
/// reshape is a view of its input); an error on the op when it has no
/// entry point.
mlir::FailureOr<std::optional<CallSpec>> callFor(mlir::Operation *op);

/// The one call of a norm or SwiGLU and the quantize_dual of its result
/// scheduled right after it in one fp8.fused region
/// (rms_norm_quantize_dual, swiglu_quantize_dual); std::nullopt otherwise.
std::optional<CallSpec> fusedCallFor(mlir::Operation *producer,
                                     mlir::Operation *next);

} // namespace infir2

#endif // INFIR2_LIB_CONVERSION_RUNTIMECALLS_H
