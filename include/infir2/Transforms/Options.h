//===- Options.h - The typed values of InfiR2's pass options ----*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The enums behind the recipe's and the optimizer's options, shared by the
// passes (Passes.td), the pipelines and the tools, so that a bad value is one
// line listing the valid ones (EnumOption.h), caught while the options are
// parsed, before any work.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TRANSFORMS_OPTIONS_H
#define INFIR2_TRANSFORMS_OPTIONS_H

#include "infir2/Support/EnumOption.h"

#include "llvm/Support/ErrorHandling.h"

#include <cstdio>
#include <limits>
#include <optional>
#include <string>

namespace infir2 {

/// Which training step the trainer pipeline builds.
enum class Recipe {
  fp8, ///< the InfiR2 recipe: GEMMs in FP8 where the policy allows
  bf16 ///< the baseline: every GEMM in high precision
};

/// How FP8 GEMM operands are scaled.
enum class Granularity {
  blockwise,  ///< InfiR2: 128x128 weight blocks, 1x128 activation groups
  tensorwise, ///< one scale per tensor
  rowwise,    ///< one scale per row of K
  mxfp8       ///< OCP MX: 1x32 blocks along K with E8M0 scales, every operand
};

/// Which FP8 formats the GEMM operands take.
enum class FormatPolicy {
  e4m3,  ///< E4M3 everywhere
  hybrid ///< E5M2 for gradients
};

/// How a scale is rounded.
enum class ScalePolicy {
  pow2, ///< up to a power of two (E8M0-compatible)
  fp32, ///< plain FP32
  floor ///< 2^(floor(log2 amax) - emax): the OCP MX specification's rule
};

/// What --infir2-verify-precision requires of every scale.
enum class RequiredScales { any, pow2, fp32, floor };

/// The update rule of @optimizer_step.
enum class OptimizerKind { adamw, sgd };

/// The element type of AdamW's moments (the masters stay FP32).
enum class OptimizerState { fp32, bf16 };

/// Where the trainer pipeline stops.
enum class TrainerStage {
  recipe,  ///< the training step with its precision decisions
  plan,    ///< planned: every tensor placed in the state or the arena
  runtime, ///< infir2rt.call ops on planned buffers
  llvm     ///< the LLVM dialect
};

} // namespace infir2

INFIR2_ENUM_OPTION_PARSER(infir2::Recipe);
INFIR2_ENUM_OPTION_PARSER(infir2::Granularity);
INFIR2_ENUM_OPTION_PARSER(infir2::FormatPolicy);
INFIR2_ENUM_OPTION_PARSER(infir2::ScalePolicy);
INFIR2_ENUM_OPTION_PARSER(infir2::RequiredScales);
INFIR2_ENUM_OPTION_PARSER(infir2::OptimizerKind);
INFIR2_ENUM_OPTION_PARSER(infir2::OptimizerState);
INFIR2_ENUM_OPTION_PARSER(infir2::TrainerStage);

namespace infir2 {

// The values of each enum option, with their help: one list for the passes,
// the pipelines and the tools.
inline llvm::cl::ValuesClass recipeValues() {
  return llvm::cl::values(
      clEnumValN(Recipe::fp8, "fp8", "the InfiR2 FP8 recipe"),
      clEnumValN(Recipe::bf16, "bf16", "the BF16 baseline"));
}
inline llvm::cl::ValuesClass granularityValues() {
  return llvm::cl::values(
      clEnumValN(Granularity::blockwise, "blockwise",
                 "InfiR2: 128x128 weight blocks, 1x128 activation and "
                 "gradient groups"),
      clEnumValN(Granularity::tensorwise, "tensorwise", "one scale per tensor"),
      clEnumValN(Granularity::rowwise, "rowwise", "one scale per row of K"),
      clEnumValN(Granularity::mxfp8, "mxfp8",
                 "OCP MX (Blackwell's MXFP8): 1x32 blocks along K with E8M0 "
                 "scales, weights included"));
}
inline llvm::cl::ValuesClass formatValues() {
  return llvm::cl::values(
      clEnumValN(FormatPolicy::e4m3, "e4m3", "E4M3 everywhere"),
      clEnumValN(FormatPolicy::hybrid, "hybrid", "E5M2 for gradients"));
}
inline llvm::cl::ValuesClass scaleValues() {
  return llvm::cl::values(
      clEnumValN(ScalePolicy::pow2, "pow2",
                 "power-of-two scales, rounded up (nothing saturates)"),
      clEnumValN(ScalePolicy::fp32, "fp32", "plain FP32 scales"),
      clEnumValN(ScalePolicy::floor, "floor",
                 "2^(floor(log2 amax) - emax), the OCP MX specification's "
                 "power of two (a block's largest values may saturate)"));
}
inline llvm::cl::ValuesClass requiredScaleValues() {
  return llvm::cl::values(
      clEnumValN(RequiredScales::any, "any", "any scale rule"),
      clEnumValN(RequiredScales::pow2, "pow2", "power-of-two scales only"),
      clEnumValN(RequiredScales::fp32, "fp32", "plain FP32 scales only"),
      clEnumValN(RequiredScales::floor, "floor", "the OCP MX floor rule only"));
}
inline llvm::cl::ValuesClass optimizerValues() {
  return llvm::cl::values(
      clEnumValN(OptimizerKind::adamw, "adamw", "AdamW"),
      clEnumValN(OptimizerKind::sgd, "sgd", "SGD"));
}
inline llvm::cl::ValuesClass optimizerStateValues() {
  return llvm::cl::values(
      clEnumValN(OptimizerState::fp32, "fp32", "FP32 moments"),
      clEnumValN(OptimizerState::bf16, "bf16",
                 "BF16 moments (half their memory; updates computed in FP32, "
                 "moments stored rounded to nearest even)"));
}
inline llvm::cl::ValuesClass trainerStageValues() {
  return llvm::cl::values(
      clEnumValN(TrainerStage::recipe, "recipe",
                 "the training step with its precision decisions"),
      clEnumValN(TrainerStage::plan, "plan", "memory planned"),
      clEnumValN(TrainerStage::runtime, "runtime",
                 "infir2rt calls on planned buffers"),
      clEnumValN(TrainerStage::llvm, "llvm", "the LLVM dialect"));
}

inline llvm::StringRef stringify(Granularity g) {
  switch (g) {
  case Granularity::blockwise:
    return "blockwise";
  case Granularity::tensorwise:
    return "tensorwise";
  case Granularity::rowwise:
    return "rowwise";
  case Granularity::mxfp8:
    return "mxfp8";
  }
  llvm_unreachable("unknown granularity");
}

/// The scale rule a policy asks of every quantization
/// (--infir2-verify-precision's requirement).
inline RequiredScales requiredScales(ScalePolicy p) {
  switch (p) {
  case ScalePolicy::pow2:
    return RequiredScales::pow2;
  case ScalePolicy::fp32:
    return RequiredScales::fp32;
  case ScalePolicy::floor:
    return RequiredScales::floor;
  }
  llvm_unreachable("unknown scale policy");
}

inline llvm::StringRef stringify(OptimizerKind k) {
  return k == OptimizerKind::adamw ? "adamw" : "sgd";
}

/// Why the optimizer's settings are out of range ("optimizer option eps = 0
/// is out of range (0, inf)"), or nothing when they are fine: betas in
/// [0, 1), eps > 0, weight decay and clipping >= 0.
inline std::optional<std::string>
checkOptimizerSettings(double beta1, double beta2, double eps,
                       double weightDecay, double gradClip) {
  struct Range {
    const char *name;
    double value, lo, hi;
    bool loOpen, hiOpen;
  };
  double inf = std::numeric_limits<double>::infinity();
  for (const Range &r : {Range{"beta1", beta1, 0, 1, false, true},
                         Range{"beta2", beta2, 0, 1, false, true},
                         Range{"eps", eps, 0, inf, true, true},
                         Range{"weight-decay", weightDecay, 0, inf, false, true},
                         Range{"grad-clip", gradClip, 0, inf, false, true}}) {
    if ((r.loOpen ? r.value > r.lo : r.value >= r.lo) &&
        (r.hiOpen ? r.value < r.hi : r.value <= r.hi))
      continue;
    char text[160];
    std::snprintf(text, sizeof text,
                  "optimizer option %s = %g is out of range %c%g, %g%c",
                  r.name, r.value, r.loOpen ? '(' : '[', r.lo, r.hi,
                  r.hiOpen ? ')' : ']');
    return std::string(text);
  }
  return std::nullopt;
}

} // namespace infir2

#endif // INFIR2_TRANSFORMS_OPTIONS_H
