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
#include "infir2/runtime/Manifest.h"

#include <string>

namespace infir2 {

/// The manifest of a planned module (its #infir2rt.plan and the planned
/// functions), as JSON: what the trainer reads at start-up to lay out its
/// state, with the runtime ABI version it was compiled for.
/// `modelConfig` is the Hugging Face config the model was imported from
/// (empty if none); `fp8Weights` and `fp8Gemms` what fp8WeightsOf and
/// fp8GemmsOf found before the functions were lowered.
mlir::FailureOr<std::string>
buildManifest(rtir::PlanAttr plan, llvm::ArrayRef<mlir::func::FuncOp> planned,
              llvm::StringRef modelConfig,
              llvm::ArrayRef<rt::ManifestFp8Weight> fp8Weights,
              uint32_t fp8Gemms);

/// The FP8 GEMM scalings (INFIR2RT_FP8_GEMM_* bits) the planned functions'
/// FP8 decisions need a device to run.
uint32_t fp8GemmsOf(llvm::ArrayRef<mlir::func::FuncOp> planned);

/// The weights whose forward GEMMs (`fp8.decision` with precision fp8, role
/// fprop) take them quantized by 2-D blocks, named by the GEMM's
/// `infir2.gemm_weight`: what an FP8 inference export stores in FP8.
std::vector<rt::ManifestFp8Weight>
fp8WeightsOf(llvm::ArrayRef<mlir::func::FuncOp> planned);

} // namespace infir2

#endif // INFIR2_LIB_CONVERSION_MANIFEST_H
