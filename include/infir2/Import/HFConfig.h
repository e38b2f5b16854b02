//===- HFConfig.h - Import Hugging Face decoder configs ---------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Reads a Hugging Face `config.json` of the Qwen2 or Llama family and builds
// the model's forward pass plus cross-entropy loss in the infir2 dialect, with
// parameters named exactly as in the Hugging Face checkpoints.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_IMPORT_HFCONFIG_H
#define INFIR2_IMPORT_HFCONFIG_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace infir2 {

/// A decoder-only transformer as a Qwen2 / Llama `config.json` describes it.
struct DecoderConfig {
  std::string architecture; // e.g. "Qwen2ForCausalLM"
  int64_t vocabSize = 0;
  int64_t hiddenSize = 0;
  int64_t intermediateSize = 0;
  int64_t numLayers = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0;
  double rmsNormEps = 0.0;
  double ropeTheta = 0.0;
  double initializerRange = 0.0;
  bool tieWordEmbeddings = false;
  /// Bias on the q, k and v projections (always in Qwen2; `attention_bias` in
  /// Llama).
  bool qkvBias = false;
  /// Bias on the output projection (`attention_bias` in Llama; never in Qwen2).
  bool outputBias = false;
};

/// Parses and validates a config.json text. Errors name the offending key, or
/// the position of a JSON syntax error.
llvm::Expected<DecoderConfig> parseHFConfig(llvm::StringRef json);

/// The shapes of the training micro-batch the forward function takes.
struct ImportOptions {
  int64_t seqLen = 4096;
  int64_t microBatch = 1;
  /// Element type of parameters and activations: "bf16", "f16" or "f32".
  std::string dtype = "bf16";
};

/// Builds `func.func @forward(params..., ids, targets, loss_mask, positions,
/// segments) -> tensor<f32>` in a new module: positions and segment ids per
/// token ([batch, seq] each), so samples packed into one sequence restart
/// their positions and attend only to themselves. Fails (with a diagnostic) only for options
/// that do not fit the configuration.
mlir::OwningOpRef<mlir::ModuleOp>
buildDecoderForward(mlir::MLIRContext *ctx, const DecoderConfig &config,
                    const ImportOptions &options);

} // namespace infir2

#endif // INFIR2_IMPORT_HFCONFIG_H
