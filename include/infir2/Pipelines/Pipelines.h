//===- Pipelines.h - InfiR2's pass pipelines --------------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Pipelines are builder functions, so that infir2-opt, infir2-compile and
// other compilers embedding InfiR2 build the very same pass list. Options are
// typed (Options.h): a bad value is one line naming the valid ones.
//
//   --fp8-recipe     the training step, its GEMMs in FP8 (the InfiR2 recipe)
//   --bf16-recipe    the training step, every GEMM in high precision
//   --infir2-trainer either recipe, then memory planning, runtime calls and
//                    the LLVM dialect: what infir2-compile emits and links
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_PIPELINES_PIPELINES_H
#define INFIR2_PIPELINES_PIPELINES_H

#include "infir2/Support/ScalarOption.h"
#include "infir2/Transforms/Options.h"

#include "mlir/Pass/PassOptions.h"

#include <optional>
#include <string>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace infir2 {

/// The optimizer a forward-only input gets (--infir2-optimizer). The
/// defaults are the InfiR2 paper's.
template <typename Derived>
struct OptimizerOptionsBase : public mlir::PassPipelineOptions<Derived> {
  using Base = mlir::PassPipelineOptions<Derived>;
  // Numbers and flags take ScalarOptionParser, so that the C API can report
  // a bad value as a diagnostic as it does a bad enum value.
  template <typename T>
  using Option = typename Base::template Option<
      T, infir2::PipelineOptionParser<Base, T>>;

  Option<OptimizerKind> optimizer{*this, "optimizer",
                                  llvm::cl::desc("The update rule"),
                                  llvm::cl::init(OptimizerKind::adamw),
                                  optimizerValues()};
  Option<double> beta1{*this, "beta1",
                       llvm::cl::desc("AdamW's first-moment decay"),
                       llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2",
                       llvm::cl::desc("AdamW's second-moment decay"),
                       llvm::cl::init(0.95)};
  Option<double> eps{*this, "eps", llvm::cl::desc("AdamW's epsilon"),
                     llvm::cl::init(1e-8)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("Decoupled weight decay"),
                             llvm::cl::init(0.1)};
  Option<double> gradClip{
      *this, "grad-clip",
      llvm::cl::desc("Global-norm gradient clipping threshold (0: none)"),
      llvm::cl::init(1.0)};
  Option<bool> decay1D{
      *this, "decay-1d",
      llvm::cl::desc("Also decay 1-D parameters (biases, norm weights)"),
      llvm::cl::init(false)};
  Option<OptimizerState> optimizerState{
      *this, "optimizer-state",
      llvm::cl::desc("The element type of AdamW's moments (the masters stay "
                     "FP32)"),
      llvm::cl::init(OptimizerState::fp32), optimizerStateValues()};
};

/// `infir2-compile --optimizer-options`: the optimizer's settings alone.
struct OptimizerOptions : public OptimizerOptionsBase<OptimizerOptions> {};

/// What both recipes take about the training step: the optimizer and data
/// parallelism.
template <typename Derived>
struct TrainingStepOptions : public OptimizerOptionsBase<Derived> {
  template <typename T>
  using Option = typename OptimizerOptionsBase<Derived>::template Option<T>;

  Option<bool> dataParallel{
      *this, "data-parallel",
      llvm::cl::desc("Make the optimizer step data-parallel: the gradients "
                     "summed across ranks (infir2.all_reduce in buckets)"),
      llvm::cl::init(false)};
  Option<bool> zero1{
      *this, "zero1",
      llvm::cl::desc("Data-parallel with the optimizer state sharded over the "
                     "ranks (ZeRO-1: reduce-scatter, update the shard, "
                     "all-gather the weights); needs world-size"),
      llvm::cl::init(false)};
  Option<int64_t> worldSize{
      *this, "world-size",
      llvm::cl::desc("The number of data-parallel ranks, for zero1"),
      llvm::cl::init(0)};
  Option<int64_t> tensorParallel{
      *this, "tensor-parallel",
      llvm::cl::desc("Shard the layers over this many tensor-parallel ranks "
                     "(Megatron-LM's layout: heads and MLP width split, "
                     "--infir2-tensor-parallel); 1: none"),
      llvm::cl::init(1)};
  Option<bool> sequenceParallel{
      *this, "sequence-parallel",
      llvm::cl::desc("With tensor-parallel, split the sequence of the norms "
                     "and residual adds between the layers' regions too "
                     "(all-gather in, reduce-scatter out)"),
      llvm::cl::init(false)};
  Option<bool> fuseOptimizer{
      *this, "fuse-optimizer",
      llvm::cl::desc("One AdamW update over all the optimizer's state, with "
                     "the working copies (numerics unchanged; off: one "
                     "update and one conversion per tensor)"),
      llvm::cl::init(true)};
  Option<bool> foldConversions{
      *this, "fold-conversions",
      llvm::cl::desc("Ops write a converted result themselves (the LM "
                     "head's gradient in BF16; numerics unchanged; off: "
                     "the FP32 gradient and a conversion)"),
      llvm::cl::init(true)};
  Option<bool> chunkLoss{
      *this, "chunk-loss",
      llvm::cl::desc("Run the LM head and the loss a chunk of tokens at a "
                     "time when the whole logits would take more than "
                     "256 MiB (the same loss and gradients to FP32 "
                     "summation order; off: the whole logits)"),
      llvm::cl::init(true)};
  Option<int64_t> lossChunkTokens{
      *this, "loss-chunk-tokens",
      llvm::cl::desc("Tokens per chunk of the LM head and the loss (the "
                     "last chunk holds what is left); 0: as many as fit in "
                     "256 MiB of logits"),
      llvm::cl::init(0)};
  Option<std::string> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("Recompute activations in the backward pass until the "
                     "planned step fits this size (e.g. 80GiB; numerics "
                     "unchanged; empty: nothing recomputed)"),
      llvm::cl::init("")};
  Option<bool> groupCalls{
      *this, "group-calls",
      llvm::cl::desc("Move quantizations and bias sums the runtime runs as "
                     "one call next to each other (numerics unchanged; off: "
                     "autodiff's order)"),
      llvm::cl::init(true)};
};

/// The FP8 recipe's policy.
template <typename Derived>
struct FP8OptionsBase : public TrainingStepOptions<Derived> {
  template <typename T>
  using Option = typename TrainingStepOptions<Derived>::template Option<T>;

  Option<Granularity> granularity{
      *this, "granularity", llvm::cl::desc("How FP8 GEMM operands are scaled"),
      llvm::cl::init(Granularity::blockwise), granularityValues()};
  Option<FormatPolicy> format{
      *this, "format", llvm::cl::desc("Which FP8 formats the operands take"),
      llvm::cl::init(FormatPolicy::e4m3), formatValues()};
  Option<ScalePolicy> scales{*this, "scales",
                             llvm::cl::desc("How scales are rounded"),
                             llvm::cl::init(ScalePolicy::pow2), scaleValues()};
  Option<unsigned> keepFirstLast{
      *this, "keep-first-last",
      llvm::cl::desc("Keep the first and last N decoder layers in BF16"),
      llvm::cl::init(0)};
  typename mlir::PassPipelineOptions<Derived>::template ListOption<std::string>
      keepHigh{
          *this, "keep-high",
          llvm::cl::desc("GEMMs to keep in BF16: WEIGHT or WEIGHT:ROLE (fprop, "
                         "dgrad, wgrad), comma-separated, as infir2-bisect "
                         "prints them")};
  typename mlir::PassPipelineOptions<Derived>::template ListOption<std::string>
      e5m2{*this, "e5m2",
           llvm::cl::desc("GEMMs whose two operands take E5M2: WEIGHT or "
                          "WEIGHT:ROLE, comma-separated, as keep-high")};
  Option<double> minGemmFlops{
      *this, "min-gemm-flops",
      llvm::cl::desc("GEMMs of fewer flops stay in BF16 (too small to gain)"),
      llvm::cl::init(1.6e7)};
  Option<std::string> costModel{
      *this, "cost-model",
      llvm::cl::desc("Keep a GEMM in BF16 where the step-time model on this "
                     "target (h100, h200) predicts FP8 would not pay"),
      llvm::cl::init("")};
  Option<bool> fuseCasts{
      *this, "fuse-casts",
      llvm::cl::desc("Fuse quantizations into norms, SwiGLU and GEMMs "
                     "(numerics unchanged; off: one op per cast)"),
      llvm::cl::init(true)};
  Option<bool> cacheWeights{
      *this, "cache-weights",
      llvm::cl::desc("Quantize the FP8 GEMMs' weights once per optimizer "
                     "step, in the optimizer step (numerics unchanged; off: "
                     "twice per micro-batch, in the training step)"),
      llvm::cl::init(true)};
};

/// `--fp8-recipe`: the InfiR2 FP8 training recipe and its variants.
struct FP8RecipeOptions : public FP8OptionsBase<FP8RecipeOptions> {};

/// `--bf16-recipe`: the baseline the InfiR2 paper compares against, the same
/// training step with every GEMM in high precision.
struct BF16RecipeOptions : public TrainingStepOptions<BF16RecipeOptions> {};

/// `--infir2-trainer`: a recipe, then the back end down to the LLVM dialect.
/// A trainer is data-parallel unless told otherwise: alone, its all-reduce is
/// a copy; under mpirun it sums the gradients of all ranks.
struct TrainerPipelineOptions : public FP8OptionsBase<TrainerPipelineOptions> {
  Option<Recipe> recipe{*this, "recipe", llvm::cl::desc("The training recipe"),
                        llvm::cl::init(Recipe::fp8), recipeValues()};
  Option<bool> reportMemory{
      *this, "report-memory",
      llvm::cl::desc("Print the planned memory by category (standard output)"),
      llvm::cl::init(false)};
  Option<TrainerStage> stopAfter{
      *this, "stop-after", llvm::cl::desc("The last stage to run"),
      llvm::cl::init(TrainerStage::llvm), trainerStageValues()};
  Option<int64_t> decodeLength{
      *this, "decode-length",
      llvm::cl::desc("The decode step's key/value cache length, the longest "
                     "prompt plus generated text: -1 for the training "
                     "sequence length when the model is a causal language "
                     "model, 0 for no decode step, N for N tokens (an error "
                     "if the model cannot decode); below -1 is an error"),
      llvm::cl::init(-1)};

  TrainerPipelineOptions() { dataParallel.setInitialValue(true); }
};

/// Adds the FP8 recipe: autodiff and the optimizer when the module has no
/// training step yet, then assign-precision, insert-quantization, CSE,
/// fuse-casts, verify-precision, fuse-accumulation, fuse-optimizer and
/// cache-fp8-weights.
void buildFP8RecipePipeline(mlir::OpPassManager &pm,
                            const FP8RecipeOptions &options);

/// Adds the BF16 baseline: autodiff and the optimizer when the module has no
/// training step yet.
void buildBF16RecipePipeline(mlir::OpPassManager &pm,
                             const BF16RecipeOptions &options);

/// Why `decode-length` cannot be `value` (below -1), or std::nullopt. Tools
/// check it with the other options, before any work; the pipeline refuses it
/// too, for callers that do not.
std::optional<std::string> checkDecodeLength(int64_t value);

/// Adds the whole way from a model to the LLVM dialect, in stages (each
/// verified by the pass manager): the decode step (--infir2-derive-decode,
/// per `decode-length`), the recipe, --infir2-plan-memory,
/// --infir2-lower-to-runtime, --convert-infir2rt-to-llvm; up to `stop-after`.
/// A `decode-length` below -1 adds only a pass that fails, naming it.
void buildTrainerPipeline(mlir::OpPassManager &pm,
                          const TrainerPipelineOptions &options);

/// Registers --fp8-recipe, --bf16-recipe and --infir2-trainer.
void registerPipelines();

} // namespace infir2

#endif // INFIR2_PIPELINES_PIPELINES_H
