//===- Checkpoints.h - Saving and loading a run -----------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// A session's checkpoints: saving a step (model folder, optimizer state,
// trainer state and the run's configuration, published atomically),
// resuming one, or loading only weights (a checkpoint, a Hugging Face model
// folder, a .safetensors file). Under ZeRO-1 every rank takes part: the
// masters and moments are gathered whole on save and sliced on load.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_LOOP_CHECKPOINTS_H
#define INFIR2_RUNTIME_DRIVER_LOOP_CHECKPOINTS_H

#include "io/CheckpointIO.h"
#include "loop/Session.h"

#include "infir2/runtime/Checkpoint.h"

#include <string>
#include <vector>

namespace infir2::rt {

class Checkpoints {
public:
  explicit Checkpoints(Session &session) : s_(session) {}

  /// --load PATH: a checkpoint (resumed, or its weights only with
  /// --load-weights-only), a model folder or a .safetensors file.
  Status load(const std::string &path);
  /// Saves step `atStep` under --save.
  Status save(int64_t atStep);

private:
  /// The whole FP32 tensor of a master or moment slot (gathered from every
  /// rank under ZeRO-1; every rank must call it, in the same order).
  Expected<std::vector<float>> wholeState(const ManifestSlot &s);
  /// Loads the parameters from a model folder or a .safetensors file.
  Status loadWeights(const std::string &path);
  Status loadOptimizerState(const std::string &path);
  /// Every parameter's working copy, to write as a model's weights; a
  /// tensor-parallel shard's whole tensor read by `gatherShard` (which
  /// every rank of the group must call, in the manifest's order).
  std::vector<TensorSource>
  weightSources(const decltype(TensorSource::data) &gatherShard);
  /// Every tensor-parallel rank's `bytes` bytes, rank after rank (empty
  /// when the gather failed).
  std::vector<uint8_t> gatherSlices(int64_t bytes, const void *mine);
  /// The working weights' type as config.json's torch_dtype names it.
  std::string torchDtype() const;
  /// config.json and generation_config.json (when the model carries its
  /// config) and the tokenizer files from `tokenizerFrom` (if any).
  Status writeModelFiles(const std::string &dir, FileDigests &digests,
                         const std::string &tokenizerFrom);

  Session &s_;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_LOOP_CHECKPOINTS_H
