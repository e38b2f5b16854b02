//===- Checkpoints.cpp - Saving and loading a run -------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Saving and resuming (exact: FP32 masters and moments, step, data position
// and RNG state) and loading Hugging Face weights. A checkpoint is a
// Hugging Face model folder (ModelFolder.h) with the training state beside
// the weights: optimizer.safetensors, trainer_state.json (CheckpointIO.h)
// and run_config.json, the run's effective configuration. This file moves
// the state between them and the device, tensor by tensor, gathering
// ZeRO-1 shards one at a time.
//
//===----------------------------------------------------------------------===//

#include "loop/Checkpoints.h"
#include "io/CheckpointIO.h"
#include "io/ModelFolder.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>

using namespace infir2::rt;
namespace fs = std::filesystem;

namespace {
const auto optimizerPrefix = StateLayout::optimizerStatePrefix;
constexpr const char *kOptimizerFile = "optimizer.safetensors";
constexpr const char *kRunConfigFile = "run_config.json";
} // namespace

Expected<std::vector<float>> Checkpoints::wholeState(const ManifestSlot &s) {
  Extent e = s_.layout.extentOf(s, s_.dp->rank());
  int64_t numel = e.numel();
  // As FP32 whatever the slot holds (BF16 moments are widened exactly).
  std::vector<float> mine = s_.hostValues(s);
  if (s_.layout.sharded()) {
    // Rank r's shard is rows [r·rows, (r+1)·rows) of the data-parallel
    // group's tensor: the shards in rank order are that tensor, then
    // padding.
    std::vector<float> all(size_t(s.numel()) * s_.dp->size());
    if (Status got = s_.dp->allGather(mine.data(), all.data(), s.numel() * 4);
        !got)
      return fail("gathering %s '%s' for the checkpoint: %s",
                  slotKindName(s.kind), s.name.c_str(), got.message().c_str());
    mine = std::move(all);
  }
  mine.resize(size_t(numel));
  // Rank 0 writes: only its tensor-parallel group (data-parallel rank 0)
  // gathers the slices.
  if (s.tpDim < 0 || !s_.tp || s_.dp->rank() != 0)
    return mine;
  // Then the tensor-parallel group's slices of the whole.
  std::vector<uint8_t> all = gatherSlices(numel * 4, mine.data());
  if (all.empty())
    return fail("gathering %s '%s' for the checkpoint over the "
                "tensor-parallel group failed",
                slotKindName(s.kind), s.name.c_str());
  std::vector<float> whole(size_t(numel) * s_.tp->size());
  s_.layout.assembleWhole(s, all.data(), 4,
                          reinterpret_cast<uint8_t *>(whole.data()));
  return whole;
}

std::vector<uint8_t> Checkpoints::gatherSlices(int64_t bytes,
                                               const void *mine) {
  std::vector<uint8_t> all(size_t(bytes) * s_.tp->size());
  if (!s_.tp->allGather(mine, all.data(), bytes))
    all.clear();
  return all;
}

Status Checkpoints::loadWeights(const std::string &path) {
  Expected<std::unique_ptr<ModelWeights>> opened = ModelWeights::open(path);
  if (!opened)
    return opened.failure();
  const ModelWeights &weights = **opened;
  // Every tensor is a parameter of this model, except what transformers
  // itself ignores: the LM head of a model that ties it to the embedding,
  // and RoPE's frequencies, which older checkpoints stored.
  bool tied = !s_.layout.find(SlotKind::Param, "lm_head.weight");
  for (const auto &[name, entry] : weights.tensors()) {
    bool ignored = (tied && name == "lm_head.weight") ||
                   name.find("rotary_emb.inv_freq") != std::string::npos;
    if (!ignored && !s_.layout.find(SlotKind::Param, name))
      return fail("%s: tensor '%s' is not a parameter of the compiled model",
                  weights.fileOf(name).c_str(), name.c_str());
  }
  StoredTensor t; // one tensor at a time: the buffer is reused
  for (const ManifestSlot &s : s_.m.slots) {
    if (s.kind != SlotKind::Param)
      continue;
    if (!weights.tensors().count(s.name))
      return fail("%s: tensor '%s' is missing", path.c_str(), s.name.c_str());
    INFIR2_RETURN_IF_ERROR(weights.read(s.name, t));
    INFIR2_RETURN_IF_ERROR(s_.layout.loadParameter(
        s, t, weights.fileOf(s.name), s_.device.state(), s_.dp->rank()));
  }
  return Status::ok();
}

Status Checkpoints::loadOptimizerState(const std::string &optPath) {
  SafetensorsFile opt;
  std::string error;
  if (!opt.open(optPath, error))
    return Failure{error};
  // Exactly the model's optimizer tensors: an extra one means a checkpoint
  // of another model (or optimizer).
  std::set<std::string> expected;
  for (const ManifestSlot &s : s_.m.slots)
    if (const char *prefix = optimizerPrefix(s))
      expected.insert(prefix + s.name);
  for (const auto &[name, t] : opt.tensors())
    if (!expected.count(name))
      return fail("%s: tensor '%s' is not optimizer state of the compiled "
                  "model",
                  optPath.c_str(), name.c_str());
  std::vector<uint8_t> bytes;
  for (const ManifestSlot &s : s_.m.slots) {
    const char *prefix = optimizerPrefix(s);
    if (!prefix)
      continue;
    std::string name = prefix + s.name;
    auto it = opt.tensors().find(name);
    if (it == opt.tensors().end())
      return fail("%s: tensor '%s' is missing", optPath.c_str(), name.c_str());
    Extent e = s_.layout.extentOf(s, s_.dp->rank());
    std::vector<int64_t> shape = s_.layout.wholeShape(s);
    if (it->second.dtype != "F32" || it->second.shape != shape)
      return fail("%s: tensor '%s' is not F32 of the model's shape",
                  optPath.c_str(), name.c_str());
    if (!opt.read(name, bytes, error))
      return Failure{error};
    // Optimizer state is finite: a NaN or inf would poison every update.
    const float *values = reinterpret_cast<const float *>(bytes.data());
    for (size_t i = 0, n = bytes.size() / 4; i < n; ++i)
      if (!std::isfinite(values[i]))
        return fail("%s: tensor '%s' holds a non-finite value (%g) at "
                    "element %zu",
                    optPath.c_str(), name.c_str(), double(values[i]), i);
    // This rank's rows under ZeRO-1 (the padding stays zero), else all; in
    // the slot's type (BF16 moments take the FP32 values rounded to nearest
    // even).
    std::memset(s_.bytesAt(s), 0, s.bytes);
    // A tensor-parallel rank's slice of the whole.
    for (int64_t i = 0; i < e.count; ++i)
      writeElement(s.dtype, s_.bytesAt(s), i,
                   values[s_.layout.wholeIndex(s, e.begin + i)]);
  }
  return Status::ok();
}

Status Checkpoints::load(const std::string &path) {
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec || !fs::exists(status))
    return fail(
        "%s: cannot open: %s", path.c_str(),
        (ec ? ec : std::make_error_code(std::errc::no_such_file_or_directory))
            .message()
            .c_str());
  if (!fs::is_directory(status))
    return loadWeights(path); // a Hugging Face safetensors file
  // A checkpoint or a model folder itself, else the newest step under it.
  std::string dir = path;
  auto has = [&](const std::string &d, const char *file) {
    return fs::exists(fs::path(d) / file, ec);
  };
  if (!has(dir, kTrainerStateFile) && !has(dir, kModelWeightsFile) &&
      !has(dir, kModelIndexFile)) {
    Expected<std::string> newest = findCheckpointDir(path);
    if (!newest)
      return fail("%s: no model (no %s or %s) and no checkpoint (no %s, no "
                  "step-* directory)",
                  path.c_str(), kModelWeightsFile, kModelIndexFile,
                  kTrainerStateFile);
    dir = *newest;
  }
  bool resume = has(dir, kTrainerStateFile) && !s_.o.loadWeightsOnly &&
                !isForeignTrainerState(dir);
  s_.loadedDir = dir;
  std::string config = (fs::path(dir) / kModelConfigFile).string();
  if (has(dir, kModelConfigFile))
    INFIR2_RETURN_IF_ERROR(checkModelConfig(config, s_.m.modelConfig));
  // A model written by hand without a config saves none, and has nothing
  // to check one against.
  else if (!resume && !s_.m.modelConfig.empty())
    return fail("%s: no %s (a Hugging Face model folder has one)", dir.c_str(),
                kModelConfigFile);
  if (!resume) {
    INFIR2_RETURN_IF_ERROR(loadWeights(dir));
    if (s_.comm.rank() == 0)
      std::printf("loaded the weights of %s\n", dir.c_str());
    return Status::ok();
  }
  // The state file first: it says what the other files must hold.
  Expected<TrainerState> state = readTrainerState(dir);
  if (!state)
    return state.failure();
  if (!state->files.count(kModelWeightsFile) &&
      !state->files.count(kModelIndexFile))
    return fail("%s/%s records no digest of the weights (%s or %s)",
                dir.c_str(), kTrainerStateFile, kModelWeightsFile,
                kModelIndexFile);
  if (!state->files.count(kOptimizerFile))
    return fail("%s/%s records no digest of %s", dir.c_str(), kTrainerStateFile,
                kOptimizerFile);
  INFIR2_RETURN_IF_ERROR(verifyCheckpointFiles(dir, *state));
  INFIR2_RETURN_IF_ERROR(loadWeights(dir));
  // Exact resume: FP32 masters and moments replace the ones derived from
  // the rounded weights.
  INFIR2_RETURN_IF_ERROR(
      loadOptimizerState((fs::path(dir) / kOptimizerFile).string()));
  s_.step = state->step;
  s_.updates = state->updates;
  s_.dataPosition = state->dataPosition;
  std::istringstream(state->rng) >> s_.rng;
  // --generate's standard output is the generated text alone.
  if (s_.comm.rank() == 0)
    std::fprintf(s_.o.generate ? stderr : stdout,
                 "resumed from %s at step %lld\n", dir.c_str(),
                 (long long)s_.step);
  return Status::ok();
}

std::vector<TensorSource>
Checkpoints::weightSources(const decltype(TensorSource::data) &gatherShard) {
  std::vector<TensorSource> sources;
  for (const ManifestSlot &s : s_.m.slots)
    if (s.kind == SlotKind::Param && s.tpDim >= 0 && s_.tp) {
      std::vector<int64_t> shape = s_.layout.wholeShape(s);
      sources.push_back({s.name, storedDtype(s.dtype), shape,
                         uint64_t(s.bytes) * uint64_t(s_.tp->size()),
                         gatherShard});
    } else if (s.kind == SlotKind::Param)
      // The working copy as it is stored: F32, BF16 or F16.
      sources.push_back({s.name, storedDtype(s.dtype), s.shape,
                         uint64_t(s.bytes),
                         [this, &s](std::string &) -> const void * {
                           return s_.bytesAt(s);
                         }});
  return sources;
}

std::string Checkpoints::torchDtype() const {
  for (const ManifestSlot &s : s_.m.slots)
    if (s.kind == SlotKind::Param)
      return s.dtype == "bf16"  ? "bfloat16"
             : s.dtype == "f16" ? "float16"
             : s.dtype == "f64" ? "float64"
                                : "float32";
  return "float32";
}

Status Checkpoints::writeModelFiles(const std::string &dir,
                                    FileDigests &digests,
                                    const std::string &tokenizerFrom) {
  if (!s_.m.modelConfig.empty()) {
    INFIR2_RETURN_IF_ERROR(writeTextFile(
        dir, kModelConfigFile, modelConfigJson(s_.m.modelConfig, torchDtype()),
        digests));
    INFIR2_RETURN_IF_ERROR(writeTextFile(dir, "generation_config.json",
                                         generationConfigJson(s_.m.modelConfig),
                                         digests));
  }
  if (!tokenizerFrom.empty())
    INFIR2_RETURN_IF_ERROR(copyTokenizer(tokenizerFrom, dir, digests));
  return Status::ok();
}

Status Checkpoints::save(int64_t atStep) {
  // Whole tensors, so that any world size can load them: under ZeRO-1 every
  // rank takes part in gathering the optimizer state, one tensor at a time,
  // as rank 0 writes it.
  INFIR2_RETURN_IF_ERROR(s_.check(s_.device.download(0, s_.m.stateBytes)));
  // What is gathered, in this order on every rank: the optimizer state,
  // then a tensor-parallel model's sharded working weights.
  std::vector<const ManifestSlot *> optimizerSlots, shardedParams;
  for (const ManifestSlot &s : s_.m.slots)
    if (StateLayout::isOptimizerState(s))
      optimizerSlots.push_back(&s);
    else if (s.kind == SlotKind::Param && s.tpDim >= 0 && s_.tp)
      shardedParams.push_back(&s);
  bool collective = s_.layout.sharded() || s_.tp;
  size_t gathered = 0, gatheredParams = 0;
  std::vector<float> whole;
  std::vector<uint8_t> wholeParam;
  auto gatherParam = [&](std::string &error) -> const void * {
    const ManifestSlot &s = *shardedParams[gatheredParams++];
    int64_t bytes = manifestDtypeSize(s.dtype);
    wholeParam = std::vector<uint8_t>(); // one gathered tensor at a time
    std::vector<uint8_t> all = gatherSlices(s.bytes, s_.bytesAt(s));
    if (all.empty()) {
      error = "gathering parameter '" + s.name +
              "' over the tensor-parallel group failed";
      return nullptr;
    }
    wholeParam.resize(all.size());
    s_.layout.assembleWhole(s, all.data(), bytes, wholeParam.data());
    return wholeParam.data();
  };
  auto gatherNext = [&](std::string &error) -> const void * {
    const ManifestSlot &s = *optimizerSlots[gathered++];
    // FP32 and whole: written as it lies; else gathered (ZeRO-1, tensor
    // parallelism) and widened (BF16 moments) into `whole`.
    if (!collective && s.dtype == "f32")
      return s_.bytesAt(s);
    whole = std::vector<float>(); // one gathered tensor at a time
    Expected<std::vector<float>> all = wholeState(s);
    if (!all) {
      error = all.message();
      return nullptr;
    }
    whole = std::move(*all);
    return whole.data();
  };
  auto gatherRest = [&]() -> Status {
    std::string error;
    while (gathered < optimizerSlots.size())
      if (!gatherNext(error) && collective)
        return Failure{error};
    while (s_.dp->rank() == 0 && gatheredParams < shardedParams.size())
      if (!gatherParam(error))
        return Failure{error};
    return Status::ok();
  };
  if (s_.comm.rank() != 0)
    return gatherRest();
  auto writeFiles = [&](const std::string &tmp) -> Expected<FileDigests> {
    // The optimizer state first: the other ranks wait in each gather only
    // for rank 0 to write the tensor before, never for the whole model.
    std::vector<TensorSource> opt;
    for (const ManifestSlot *s : optimizerSlots) {
      std::vector<int64_t> shape = s_.layout.wholeShape(*s);
      int64_t numel = 1;
      for (int64_t d : shape)
        numel *= d;
      opt.push_back({optimizerPrefix(*s) + s->name, "F32", shape,
                     uint64_t(numel) * 4, gatherNext});
    }
    std::string error;
    FileDigest optDigest;
    if (!writeSafetensors(tmp + "/" + kOptimizerFile, opt, {}, error,
                          &optDigest))
      return Failure{error};
    Expected<FileDigests> digests =
        writeModelWeights(tmp, weightSources(gatherParam), s_.o.maxShardSize,
                          /*alwaysIndexed=*/true);
    if (!digests)
      return digests.failure();
    (*digests)[kOptimizerFile] = optDigest;
    INFIR2_RETURN_IF_ERROR(
        writeModelFiles(tmp, *digests, s_.tokenizerSource()));
    INFIR2_RETURN_IF_ERROR(
        writeTextFile(tmp, kRunConfigFile, toJson(s_.o) + "\n", *digests));
    return digests;
  };
  std::ostringstream rng;
  rng << s_.rng;
  std::string warning;
  Status published = publishCheckpoint(
      s_.o.save,
      TrainerState{atStep, s_.updates, s_.dataPosition, rng.str(), {}},
      writeFiles, warning);
  // A save that stopped early still owes the other ranks their gathers.
  Status rest = gatherRest();
  if (!published)
    return fail("checkpoint at step %lld: %s", (long long)atStep,
                published.message().c_str());
  INFIR2_RETURN_IF_ERROR(rest);
  if (!warning.empty())
    std::fprintf(stderr, "trainer: warning: %s\n", warning.c_str());
  return Status::ok();
}
