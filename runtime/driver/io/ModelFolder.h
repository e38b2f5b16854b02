//===- ModelFolder.h - Hugging Face model folders in and out ----*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// A Hugging Face model folder as `transformers` writes and reads it:
//   config.json, generation_config.json,
//   model.safetensors, or model-00001-of-0000N.safetensors ... with
//   model.safetensors.index.json {"metadata": {"total_size": bytes},
//                                 "weight_map": {tensor: file}},
//   the tokenizer's files.
// Weights stream tensor by tensor both ways (TensorSource, SafetensorsFile),
// so a folder of any size needs one tensor's buffer beyond the model.
// Shards are cut as `save_pretrained(max_shard_size=...)` cuts them: in
// order, a new shard when the next tensor would overflow the current one.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_IO_MODELFOLDER_H
#define INFIR2_RUNTIME_DRIVER_IO_MODELFOLDER_H

#include "io/CheckpointIO.h"

#include "infir2/runtime/Checkpoint.h"
#include "infir2/runtime/Expected.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace infir2::rt {

constexpr const char *kModelWeightsFile = "model.safetensors";
constexpr const char *kModelIndexFile = "model.safetensors.index.json";
constexpr const char *kModelConfigFile = "config.json";

/// Writes `weights` into `dir` as model.safetensors, or as shards of at
/// most `maxShardBytes` of tensor data (a tensor larger than that gets a
/// shard of its own) with their index. Returns each file's digest.
/// `alwaysIndexed` writes the index even for one shard (named
/// model-00001-of-00001.safetensors): loaders that glob *.safetensors (vLLM)
/// then keep to the index, not to other safetensors files beside it, such
/// as a checkpoint's optimizer state.
Expected<FileDigests>
writeModelWeights(const std::string &dir,
                  const std::vector<TensorSource> &weights,
                  int64_t maxShardBytes, bool alwaysIndexed);

/// Writes `text` to DIR/NAME and records its digest in `digests`.
Status writeTextFile(const std::string &dir, const std::string &name,
                     const std::string &text, FileDigests &digests);

/// config.json's text: the compiled model's Hugging Face config
/// (`modelConfig`) with `torch_dtype` set and, when given, `extra` keys
/// (a JSON object's text, e.g. a quantization_config) added.
std::string modelConfigJson(const std::string &modelConfig,
                            const std::string &torchDtype,
                            const std::string &extra = "");

/// generation_config.json's text, from the config's token ids.
std::string generationConfigJson(const std::string &modelConfig);

/// Copies the tokenizer files at `tokenizer` (a tokenizer.json, or a folder
/// holding it and its companions) into `dir`.
Status copyTokenizer(const std::string &tokenizer, const std::string &dir,
                     FileDigests &digests);

/// Checks a folder's config.json against the compiled model's config: the
/// fields that shape the model must agree; a mismatch names the field.
Status checkModelConfig(const std::string &path, const std::string &compiled);

/// The weights of a model folder (model.safetensors, or the shards its
/// index names) or of one .safetensors file, opened for reading tensor by
/// tensor. Opening checks what transformers checks: every shard the index
/// names exists and holds exactly the tensors the index assigns to it, and
/// no shard of the folder is left out of the index.
class ModelWeights {
public:
  static Expected<std::unique_ptr<ModelWeights>> open(const std::string &path);

  /// Every tensor's name, dtype and shape.
  const std::map<std::string, TensorEntry> &tensors() const { return entries_; }
  /// The file that holds tensor `name`, for messages.
  const std::string &fileOf(const std::string &name) const;
  /// Reads tensor `name` into `out`.
  Status read(const std::string &name, StoredTensor &out) const;

private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, TensorEntry> entries_;
  std::map<std::string, const SafetensorsFile *> owner_;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_IO_MODELFOLDER_H
