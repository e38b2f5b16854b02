//===- Pipelines.cpp - InfiR2's pass pipelines ----------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Pipelines/Pipelines.h"

#include "infir2/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

/// Derives the training step unless the module already has one, and makes
/// it data-parallel when asked.
template <typename Options>
static void addTrainingStep(OpPassManager &pm, const Options &options) {
  infir2::AutodiffPassOptions autodiff;
  autodiff.skipIfPresent = true;
  pm.addPass(infir2::createAutodiffPass(autodiff));
  infir2::OptimizerPassOptions opt;
  opt.optimizer = options.optimizer;
  opt.skipIfPresent = true;
  pm.addPass(infir2::createOptimizerPass(opt));
  if (options.dataParallel || options.zero1) {
    infir2::DataParallelPassOptions dp;
    dp.zero1 = options.zero1;
    dp.worldSize = options.worldSize;
    pm.addPass(infir2::createDataParallelPass(dp));
  }
}

void infir2::buildFP8RecipePipeline(OpPassManager &pm,
                                    const FP8RecipeOptions &options) {
  addTrainingStep(pm, options);
  AssignPrecisionPassOptions assign;
  assign.recipe = options.recipe;
  assign.format = options.format;
  assign.scales = options.scales;
  assign.keepFirstLast = options.keepFirstLast;
  assign.minGemmFlops = options.minGemmFlops;
  pm.addPass(createAssignPrecisionPass(assign));
  pm.addPass(createInsertQuantizationPass());
  // One quantization per value and granularity, however many GEMMs read it.
  pm.addPass(createCSEPass());
  if (options.fuseCasts)
    pm.addPass(createFuseCastsPass());
  VerifyPrecisionPassOptions verify;
  verify.scales = options.scales;
  pm.addPass(createVerifyPrecisionPass(verify));
}

void infir2::buildBF16RecipePipeline(OpPassManager &pm,
                                     const BF16RecipeOptions &options) {
  addTrainingStep(pm, options);
  pm.addPass(createCSEPass());
}

void infir2::registerPipelines() {
  PassPipelineRegistration<FP8RecipeOptions>(
      "fp8-recipe",
      "Derives the training step if needed and runs its GEMMs in FP8 with "
      "the InfiR2 recipe (or a variant), every decision recorded in the IR",
      buildFP8RecipePipeline);
  PassPipelineRegistration<BF16RecipeOptions>(
      "bf16-recipe",
      "Derives the training step if needed, every GEMM in high precision "
      "(the baseline the InfiR2 paper compares against)",
      buildBF16RecipePipeline);
}
