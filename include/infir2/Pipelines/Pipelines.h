//===- Pipelines.h - InfiR2's pass pipelines --------------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Pipelines are builder functions, so that infir2-opt, infir2-compile and
// other compilers embedding InfiR2 build the very same pass list.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_PIPELINES_PIPELINES_H
#define INFIR2_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace infir2 {

/// What both recipes take about the training step: the optimizer that a
/// forward-only input gets, and data parallelism.
template <typename Derived>
struct TrainingStepOptions : public mlir::PassPipelineOptions<Derived> {
  using Base = mlir::PassPipelineOptions<Derived>;
  template <typename T> using Option = typename Base::template Option<T>;

  Option<std::string> optimizer{
      *this, "optimizer",
      llvm::cl::desc("adamw or sgd, for a forward-only input"),
      llvm::cl::init("adamw")};
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
};

/// `--fp8-recipe`: the InfiR2 FP8 training recipe and its variants.
struct FP8RecipeOptions : public TrainingStepOptions<FP8RecipeOptions> {
  Option<std::string> recipe{
      *this, "recipe",
      llvm::cl::desc("blockwise (InfiR2: 128x128 weights, 1x128 activations "
                     "and gradients), tensorwise or rowwise"),
      llvm::cl::init("blockwise")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("e4m3 everywhere, or hybrid (E5M2 gradients)"),
      llvm::cl::init("e4m3")};
  Option<std::string> scales{*this, "scales",
                             llvm::cl::desc("pow2 or fp32 scales"),
                             llvm::cl::init("pow2")};
  Option<unsigned> keepFirstLast{
      *this, "keep-first-last",
      llvm::cl::desc("Keep the first and last N decoder layers in BF16"),
      llvm::cl::init(0)};
  Option<double> minGemmFlops{
      *this, "min-gemm-flops",
      llvm::cl::desc("GEMMs of fewer flops stay in BF16 (too small to gain)"),
      llvm::cl::init(1.6e7)};
  Option<bool> fuseCasts{
      *this, "fuse-casts",
      llvm::cl::desc("Fuse quantizations into norms, SwiGLU and GEMMs "
                     "(numerics unchanged; off: one op per cast)"),
      llvm::cl::init(true)};
};

/// `--bf16-recipe`: the baseline the InfiR2 paper compares against, the same
/// training step with every GEMM in high precision.
struct BF16RecipeOptions : public TrainingStepOptions<BF16RecipeOptions> {};

/// Adds the FP8 recipe: autodiff and the optimizer when the module has no
/// training step yet, then assign-precision, insert-quantization, CSE,
/// fuse-casts and verify-precision.
void buildFP8RecipePipeline(mlir::OpPassManager &pm,
                            const FP8RecipeOptions &options);

/// Adds the BF16 baseline: autodiff and the optimizer when the module has no
/// training step yet.
void buildBF16RecipePipeline(mlir::OpPassManager &pm,
                             const BF16RecipeOptions &options);

/// Registers --fp8-recipe and --bf16-recipe for command-line tools.
void registerPipelines();

} // namespace infir2

#endif // INFIR2_PIPELINES_PIPELINES_H
