//===- Pipelines.cpp - Run InfiR2's pipelines from C ----------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The pipelines are built by the builders infir2-opt registers
// (Pipelines.h); this file only parses the options and reports what is wrong
// with them as diagnostics, where the tools print to stderr.
//
//===----------------------------------------------------------------------===//

#include "infir2-c/Pipelines.h"

#include "infir2/Pipelines/Pipelines.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include <string>

using namespace mlir;

namespace {

/// Parses `text` into `options`. Whatever is wrong (an unknown key, an enum
/// value, an optimizer setting out of range) becomes an error at the module's
/// location (Operation::emitError would attach the whole module as a note).
template <typename OptionsT>
LogicalResult parseOptions(ModuleOp module, llvm::StringRef pipeline,
                           llvm::StringRef text, OptionsT &options) {
  std::string valueError, parserError;
  llvm::raw_string_ostream os(parserError);
  LogicalResult parsed = success();
  {
    infir2::OptionErrorCapture capture(valueError);
    parsed = options.parseFromString(text, os);
  }
  if (failed(parsed)) {
    // MLIR's option parser prefixes its own errors ("no such option bogus").
    llvm::StringRef why = valueError.empty() ? llvm::StringRef(parserError)
                                             : llvm::StringRef(valueError);
    why.consume_front("<Pass-Options-Parser>: ");
    why = why.trim();
    InFlightDiagnostic diag = emitError(module.getLoc())
                              << "bad " << pipeline << " options '" << text
                              << "'";
    // A value only llvm::cl's own parser checks (world-size, an int64_t) is
    // described by llvm::cl on stderr; the diagnostic still names the string.
    if (!why.empty())
      diag << ": " << why;
    return failure();
  }
  if (std::optional<std::string> bad = infir2::checkOptimizerSettings(
          options.beta1, options.beta2, options.eps, options.weightDecay,
          options.gradClip))
    return emitError(module.getLoc())
           << "bad " << pipeline << " options '" << text << "': " << *bad;
  return success();
}

/// Parses the options, builds the pipeline with `build` and runs it on the
/// module.
template <typename OptionsT>
MlirLogicalResult run(MlirModule cModule, MlirStringRef cOptions,
                      llvm::StringRef pipeline,
                      void (*build)(OpPassManager &, const OptionsT &)) {
  ModuleOp module = unwrap(cModule);
  OptionsT options;
  if (failed(parseOptions(module, pipeline, unwrap(cOptions), options)))
    return wrap(failure());
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  build(pm, options);
  return wrap(pm.run(module));
}

} // namespace

MlirLogicalResult infir2RunFP8Recipe(MlirModule module, MlirStringRef options) {
  return run<infir2::FP8RecipeOptions>(module, options, "fp8-recipe",
                                       infir2::buildFP8RecipePipeline);
}

MlirLogicalResult infir2RunBF16Recipe(MlirModule module,
                                      MlirStringRef options) {
  return run<infir2::BF16RecipeOptions>(module, options, "bf16-recipe",
                                        infir2::buildBF16RecipePipeline);
}

MlirLogicalResult infir2RunTrainerPipeline(MlirModule module,
                                           MlirStringRef options) {
  return run<infir2::TrainerPipelineOptions>(module, options, "infir2-trainer",
                                             infir2::buildTrainerPipeline);
}
