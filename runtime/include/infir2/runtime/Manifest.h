//===- Manifest.h - What a compiled model tells its trainer -----*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The manifest infir2-compile embeds in every compiled model
// (infir2_model_manifest) and the trainer reads at start-up: the layout of
// the state region, the scratch size, the shapes it was compiled for and the
// optimizer's hyper-parameters. One typed struct, written by the compiler
// (lib/Conversion/Manifest.cpp, in --infir2-lower-to-runtime) and read by
// the driver, as JSON:
//
//   {"format":"infir2-manifest","abi_version":5,"state_bytes":...,
//    "scratch_bytes":...,"batch":4,"seq":128,"vocab":256,
//    "zero1_world_size":0,
//    "optimizer":{"kind":"adamw","beta1":0.9,"beta2":0.95,"eps":1e-08,
//                 "weight_decay":0.1,"grad_clip":1.0},
//    "slots":[{"kind":"param","name":"model.embed_tokens.weight",
//              "dtype":"bf16","offset":0,"bytes":131072,"shape":[256,256],
//              "init":"normal","std":0.02}, ...],
//    "functions":[{"symbol":"infir2_train_step","scratch_bytes":...}, ...],
//    "model_config":{...config.json...},
//    "fp8_weights":[{"name":"model.layers.0.mlp.up_proj.weight",
//                    "block":[128,128],"format":"e4m3","scales":"pow2"}, ...],
//    "fp8_gemms":["block128"]}
//
// model_config, fp8_weights and fp8_gemms ("block128" and/or "mx": the FP8
// GEMM scalings the plan needs a device to run) are optional.
//
// This header holds no JSON library: the compiler, built without C++
// exceptions, includes it too.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_MANIFEST_H
#define INFIR2_RUNTIME_MANIFEST_H

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Backend.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infir2::rt {

/// What a state slot holds (the compiler's #infir2rt.slot kinds, in their
/// order).
enum class SlotKind {
  Param,    ///< a parameter's working copy
  Master,   ///< its FP32 master
  Moment1,  ///< AdamW's first moment
  Moment2,  ///< and second
  Grad,     ///< a gradient accumulator
  Input,    ///< a step's input (token ids, learning rate, ...)
  Output,   ///< a step's output (loss, gradient norm, ...)
  Cache,    ///< the decode step's key/value cache
  Fp8Cache, ///< a weight's FP8 codes and scales, refreshed per update
};

/// The manifest's spelling of a slot kind: "param", ..., "fp8_cache".
const char *slotKindName(SlotKind kind);
/// The slot kind `name` spells, if any.
std::optional<SlotKind> parseSlotKind(std::string_view name);

/// One tensor of the state region.
struct ManifestSlot {
  SlotKind kind = SlotKind::Param;
  /// The Hugging Face tensor name, or the input's or output's role.
  std::string name;
  /// The element type as MLIR spells it: f32, bf16, f16, f64, i32, i64, i1.
  std::string dtype;
  int64_t offset = 0, bytes = 0;
  std::vector<int64_t> shape;
  /// For parameters: normal (with `std`), ones or zeros.
  std::string init = "zeros";
  double std = 0.0;
  /// In a tensor-parallel model, for a parameter and its state: the
  /// dimension of the whole tensor this rank holds a contiguous 1/N of (rank
  /// r of N: [r·n, (r+1)·n)); -1 when every rank holds it whole.
  int64_t tpDim = -1;

  int64_t numel() const;
};

/// One compiled function and the scratch arena it needs.
struct ManifestFunction {
  std::string symbol;
  int64_t scratchBytes = 0;
};

/// The optimizer the update step was compiled with.
struct ManifestOptimizer {
  std::string kind = "adamw"; ///< adamw or sgd (no betas, no eps)
  double beta1 = 0.0, beta2 = 0.0, eps = 0.0;
  double weightDecay = 0.0, gradClip = 0.0;
};

/// A GEMM weight the compiled plan quantizes to FP8 by blocks (the FP8
/// recipe's 128x128 weight blocks), as the FP8 inference export writes it.
struct ManifestFp8Weight {
  std::string name; ///< the parameter's Hugging Face name
  int64_t blockRows = 128, blockCols = 128;
  std::string format = "e4m3";
  std::string scales = "fp32"; ///< fp32 (amax / max) or pow2 (rounded up)
};

struct Manifest {
  int64_t abiVersion = INFIR2RT_ABI_VERSION;
  int64_t stateBytes = 0, scratchBytes = 0;
  int64_t batch = 0, seq = 0, vocab = 0;
  /// The ranks the masters and moments are row-sharded over (ZeRO-1), or 0.
  int64_t zero1WorldSize = 0;
  /// The ranks of a tensor-parallel group (1: none); the slots' shapes are
  /// one rank's.
  int64_t tensorParallel = 1;
  std::vector<ManifestSlot> slots;
  std::vector<ManifestFunction> functions;
  std::optional<ManifestOptimizer> optimizer;
  /// The Hugging Face config.json the model was imported from (a JSON
  /// object's text), or empty for a model written by hand without one.
  std::string modelConfig;
  /// Every GEMM weight the forward pass quantizes to FP8 by blocks.
  std::vector<ManifestFp8Weight> fp8Weights;
  /// The FP8 GEMM scalings the plan runs that a device may lack
  /// (INFIR2RT_FP8_GEMM_* bits of Backend.h).
  uint32_t fp8Gemms = 0;
};

/// Bytes per element of a slot dtype (f32, bf16, ...), or 0 if unknown.
int64_t manifestDtypeSize(std::string_view dtype);

/// The manifest as one line of JSON.
std::string toJson(const Manifest &manifest);

/// Reads a manifest. On failure returns nothing and sets `error` to one line:
/// the JSON syntax error, the missing or mistyped field (by its path, e.g.
/// `slots[3].shape`), a foreign format, or an ABI version this runtime does
/// not speak.
std::optional<Manifest> parseManifest(std::string_view json,
                                      std::string &error);

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_MANIFEST_H
