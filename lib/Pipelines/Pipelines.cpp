//===- Pipelines.cpp - InfiR2's pass pipelines ----------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Pipelines/Pipelines.h"

#include "infir2/Conversion/Passes.h"
#include "infir2/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace infir2;

namespace {

/// Fails with `message` at the module: a pipeline option out of range that
/// reached the builder unchecked (infir2-opt, the C API), refused before any
/// pass runs rather than read as another value.
struct BadPipelineOptionPass
    : public PassWrapper<BadPipelineOptionPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(BadPipelineOptionPass)

  explicit BadPipelineOptionPass(std::string message)
      : message(std::move(message)) {}
  StringRef getArgument() const override {
    return "infir2-bad-pipeline-option";
  }
  void runOnOperation() override {
    // At the module's location, without the module attached as a note.
    emitError(getOperation().getLoc()) << message;
    signalPassFailure();
  }

  std::string message;
};

} // namespace

std::optional<std::string> infir2::checkDecodeLength(int64_t value) {
  if (value >= -1)
    return std::nullopt;
  return "decode-length must be -1 (the training sequence length), 0 (no "
         "decode step) or a positive length, got " +
         std::to_string(value);
}

/// Derives the training step unless the module already has one, and makes
/// it data-parallel when asked.
template <typename Derived>
static void addTrainingStep(OpPassManager &pm,
                            const TrainingStepOptions<Derived> &options,
                            int64_t fp8Block) {
  if (options.sequenceParallel && options.tensorParallel == 1) {
    pm.addPass(std::make_unique<BadPipelineOptionPass>(
        "sequence-parallel splits the sequence over a tensor-parallel group: "
        "set tensor-parallel to 2 or more"));
    return;
  }
  if (options.tensorParallel != 1) {
    TensorParallelPassOptions tp;
    tp.size = options.tensorParallel;
    tp.fp8Block = fp8Block;
    tp.sequenceParallel = options.sequenceParallel;
    pm.addPass(createTensorParallelPass(tp));
  }
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
  opt.optimizerState = options.optimizerState;
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

/// The LM head and the loss by chunks of tokens, when asked to.
template <typename Derived>
static void addChunkLoss(OpPassManager &pm,
                         const TrainingStepOptions<Derived> &options) {
  if (!options.chunkLoss)
    return;
  ChunkLossPassOptions chunk;
  chunk.tokens = options.lossChunkTokens;
  pm.addPass(createChunkLossPass(chunk));
}

/// Recomputation to fit a memory budget, the recipe's last decision.
template <typename Derived>
static void addRecompute(OpPassManager &pm,
                         const TrainingStepOptions<Derived> &options) {
  if (options.memoryBudget.empty())
    return;
  RecomputePassOptions recompute;
  recompute.budget = options.memoryBudget;
  pm.addPass(createRecomputePass(recompute));
}

template <typename Derived>
static void addFP8Recipe(OpPassManager &pm,
                         const FP8OptionsBase<Derived> &options) {
  // A shard's scales are the whole tensor's only where a block or group
  // never spans two ranks: the recipe's 128-wide blocks, each whole on one.
  if (options.tensorParallel != 1 &&
      options.granularity != Granularity::blockwise) {
    pm.addPass(std::make_unique<BadPipelineOptionPass>(
        options.granularity == Granularity::mxfp8
            ? "tensor-parallel needs granularity=blockwise: the sharding "
              "pass keeps the recipe's 128-wide blocks whole on a rank and "
              "does not shard MX blocks yet"
            : "tensor-parallel needs granularity=blockwise: a per-tensor or "
              "per-row scale of a shard would need the maximum over the "
              "ranks"));
    return;
  }
  addTrainingStep(pm, options, /*fp8Block=*/128);
  AssignPrecisionPassOptions assign;
  assign.granularity = options.granularity;
  assign.format = options.format;
  assign.scales = options.scales;
  assign.keepFirstLast = options.keepFirstLast;
  assign.keepHigh.assign(options.keepHigh.begin(), options.keepHigh.end());
  assign.e5m2.assign(options.e5m2.begin(), options.e5m2.end());
  assign.minGemmFlops = options.minGemmFlops;
  assign.costModel = options.costModel;
  pm.addPass(createAssignPrecisionPass(assign));
  pm.addPass(createInsertQuantizationPass());
  // One quantization per value and granularity, however many GEMMs read it.
  pm.addPass(createCSEPass());
  if (options.fuseCasts)
    pm.addPass(createFuseCastsPass());
  VerifyPrecisionPassOptions verify;
  verify.scales = requiredScales(options.scales);
  pm.addPass(createVerifyPrecisionPass(verify));
  // Weight gradients added to their FP32 accumulators by the GEMMs.
  pm.addPass(createFuseAccumulationPass());
  if (options.foldConversions)
    pm.addPass(createFoldConversionsPass());
  addChunkLoss(pm, options);
  if (options.groupCalls)
    pm.addPass(createGroupCallsPass());
  if (options.fuseOptimizer)
    pm.addPass(createFuseOptimizerPass());
  // FP8 weights quantized by the optimizer step, read by every micro-batch.
  if (options.cacheWeights)
    pm.addPass(createCacheFP8WeightsPass());
  addRecompute(pm, options);
}

template <typename Derived>
static void addBF16Recipe(OpPassManager &pm,
                          const TrainingStepOptions<Derived> &options) {
  addTrainingStep(pm, options, /*fp8Block=*/0);
  pm.addPass(createCSEPass());
  pm.addPass(createFuseAccumulationPass());
  if (options.foldConversions)
    pm.addPass(createFoldConversionsPass());
  addChunkLoss(pm, options);
  if (options.groupCalls)
    pm.addPass(createGroupCallsPass());
  if (options.fuseOptimizer)
    pm.addPass(createFuseOptimizerPass());
  addRecompute(pm, options);
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
  if (std::optional<std::string> bad =
          checkDecodeLength(options.decodeLength)) {
    pm.addPass(std::make_unique<BadPipelineOptionPass>(*bad));
    return;
  }
  // Generation runs one process: a tensor-parallel trainer has no decode
  // step (its saved model folder, compiled at tensor-parallel=1, has).
  if (options.tensorParallel != 1 && options.decodeLength > 0) {
    pm.addPass(std::make_unique<BadPipelineOptionPass>(
        "decode-length: a tensor-parallel trainer has no decode step "
        "(generation runs one process); compile its saved model folder at "
        "tensor-parallel=1 to generate"));
    return;
  }
  // From the forward as written, before the recipe rewrites its GEMMs.
  if (options.decodeLength != 0 && options.tensorParallel == 1) {
    DeriveDecodePassOptions decode;
    decode.maxLength = options.decodeLength == -1 ? 0 : options.decodeLength;
    decode.ifSupported = options.decodeLength == -1;
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
