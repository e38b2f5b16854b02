//===- PrecisionCost.h - FP8 where the step-time model says it pays -*- C++
//-*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Internal to --infir2-assign-precision's cost-model option.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_LIB_TRANSFORMS_PRECISIONCOST_H
#define INFIR2_LIB_TRANSFORMS_PRECISIONCOST_H

#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/Transforms/StepTime.h"

#include "llvm/ADT/DenseMap.h"

#include <string>

namespace infir2 {

/// A GEMM the recipe would put in FP8, and the operands it would quantize
/// for it each micro-batch (activations and gradients; not a weight).
struct CostCandidate {
  mlir::Operation *gemm;
  llvm::SmallVector<mlir::Value, 2> quantized;
};

/// Which candidates `target`'s step-time model keeps in high precision, with
/// the reason. GEMMs that quantize a common operand (its source through
/// reshapes and transposes) form a group, and the group takes the choice of
/// FP8 GEMMs with the least predicted time: its high-precision GEMMs at the
/// BF16 rates, its FP8 GEMMs at the FP8 rates, and one quantization per
/// operand an FP8 GEMM reads (every choice up to 12 GEMMs, all or none
/// beyond; a tie keeps high precision).
llvm::DenseMap<mlir::Operation *, std::string>
keptHighByCost(llvm::ArrayRef<CostCandidate> candidates,
               const StepTimeTarget &target);

} // namespace infir2

#endif // INFIR2_LIB_TRANSFORMS_PRECISIONCOST_H
