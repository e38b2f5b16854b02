//===- Pipelines.cpp - InfiR2's pass pipelines ----------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Pipelines/Pipelines.h"

#include "infir2/Conversion/Passes.h"
#include "infir2/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace infir2;

/// Derives the training step unless the module already has one, and makes
/// it data-parallel when asked.
template <typename Derived>
static void addTrainingStep(OpPassManager &pm,
                            const TrainingStepOptions<Derived> &options) {
  AutodiffPassOptions autodiff;
  autodiff.skipIfPresent = true;
  pm.addPass(createAutodiffPass(autodiff));
  OptimizerPassOptions opt;
  opt.optimizer = options.optimizer;
  opt.beta1 = options.beta1;
  opt.beta2 = options.beta2;
  opt.eps = options.eps;
  opt.weightDecay = options.weightDecay;
  opt.gradClip = options.gradClip;
  opt.decay1D = options.decay1D;
  opt.skipIfPresent = true;
  pm.addPass(createOptimizerPass(opt));
  // world-size without zero1 reaches the pass, which refuses it.
  if (options.dataParallel || options.zero1 || options.worldSize != 0) {
    DataParallelPassOptions dp;
    dp.zero1 = options.zero1;
    dp.worldSize = options.worldSize;
    pm.addPass(createDataParallelPass(dp));
  }
}

template <typename Derived>
static void addFP8Recipe(OpPassManager &pm,
                         const FP8OptionsBase<Derived> &options) {
  addTrainingStep(pm, options);
  AssignPrecisionPassOptions assign;
  assign.granularity = options.granularity;
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
  verify.scales = options.scales == ScalePolicy::pow2 ? RequiredScales::pow2
                                                      : RequiredScales::fp32;
  pm.addPass(createVerifyPrecisionPass(verify));
}

template <typename Derived>
static void addBF16Recipe(OpPassManager &pm,
                          const TrainingStepOptions<Derived> &options) {
  addTrainingStep(pm, options);
  pm.addPass(createCSEPass());
}

void infir2::buildFP8RecipePipeline(OpPassManager &pm,
                                    const FP8RecipeOptions &options) {
  addFP8Recipe(pm, options);
}

void infir2::buildBF16RecipePipeline(OpPassManager &pm,
                                     const BF16RecipeOptions &options) {
  addBF16Recipe(pm, options);
}

void infir2::buildTrainerPipeline(OpPassManager &pm,
                                  const TrainerPipelineOptions &options) {
  // From the forward as written, before the recipe rewrites its GEMMs.
  if (options.decodeLength != 0) {
    DeriveDecodePassOptions decode;
    decode.maxLength = std::max<int64_t>(options.decodeLength, 0);
    decode.ifSupported = options.decodeLength < 0;
    pm.addPass(createDeriveDecodePass(decode));
  }
  if (options.recipe == Recipe::fp8)
    addFP8Recipe(pm, options);
  else
    addBF16Recipe(pm, options);
  if (options.stopAfter == TrainerStage::recipe)
    return;
  PlanMemoryPassOptions plan;
  plan.report = options.reportMemory;
  pm.addPass(createPlanMemoryPass(plan));
  if (options.stopAfter == TrainerStage::plan)
    return;
  pm.addPass(createLowerToRuntimePass());
  if (options.stopAfter == TrainerStage::runtime)
    return;
  pm.addPass(createConvertInfir2rtToLLVMPass());
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
  PassPipelineRegistration<TrainerPipelineOptions>(
      "infir2-trainer",
      "The whole way from a model to the LLVM dialect a trainer is built "
      "from: a recipe, memory planning, runtime calls, LLVM (what "
      "infir2-compile emits)",
      buildTrainerPipeline);
}
