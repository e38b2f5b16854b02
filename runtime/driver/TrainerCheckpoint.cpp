//===- TrainerCheckpoint.cpp - The loop's checkpoints ---------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Saving and resuming (exact: FP32 masters and moments, step, data position
// and RNG state) and loading Hugging Face weights. The formats
// are CheckpointIO's and safetensors'; this file moves the state between
// them and the device, gathering ZeRO-1 shards.
//
//===----------------------------------------------------------------------===//

#include "CheckpointIO.h"
#include "Trainer.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>

using namespace infir2::rt;

namespace {
const auto optimizerPrefix = StateLayout::optimizerStatePrefix;
} // namespace

Expected<std::vector<float>> Trainer::wholeState(const ManifestSlot &s) {
  Extent e = layout_.extentOf(s, comm_.rank());
  int64_t numel = e.numel();
  if (!layout_.sharded())
    return std::vector<float>(at<float>(s), at<float>(s) + numel);
  // Rank r's shard is rows [r·rows, (r+1)·rows) of the whole: the shards
  // in rank order are the whole tensor, then padding.
  std::vector<float> all(size_t(s.numel()) * comm_.size());
  std::string error;
  if (!comm_.allGather(at<float>(s), all.data(), s.numel() * 4, error))
    return fail("gathering %s '%s' for the checkpoint: %s", s.kind.c_str(),
                s.name.c_str(), error.c_str());
  all.resize(numel);
  return all;
}

Status Trainer::loadWeights(const std::string &path) {
  std::map<std::string, StoredTensor> tensors;
  std::string error;
  if (!readSafetensors(path, tensors, error))
    return Failure{error};
  return layout_.loadParameters(tensors, path, device_.state(), comm_.rank());
}

Status Trainer::loadCheckpoint(const std::string &path) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    return fail(
        "%s: cannot open: %s", path.c_str(),
        (ec ? ec : std::make_error_code(std::errc::no_such_file_or_directory))
            .message()
            .c_str());
  if (!std::filesystem::is_directory(status))
    return loadWeights(path); // a Hugging Face safetensors file
  Expected<std::string> dir = findCheckpointDir(path);
  if (!dir)
    return dir.failure();
  // The state file first: it says what the other files must hold.
  Expected<TrainerState> state = readTrainerState(*dir);
  if (!state)
    return state.failure();
  for (const char *file : {"model.safetensors", "optimizer.safetensors"})
    if (!state->files.count(file))
      return fail("%s/%s records no digest of %s", dir->c_str(),
                  kTrainerStateFile, file);
  INFIR2_RETURN_IF_ERROR(verifyCheckpointFiles(*dir, *state));
  INFIR2_RETURN_IF_ERROR(loadWeights(*dir + "/model.safetensors"));
  // Exact resume: FP32 masters and moments replace the ones derived from
  // the rounded weights.
  std::map<std::string, StoredTensor> opt;
  std::string error;
  std::string optPath = *dir + "/optimizer.safetensors";
  if (!readSafetensors(optPath, opt, error))
    return Failure{error};
  // Exactly the model's optimizer tensors: an extra one means a checkpoint
  // of another model (or optimizer).
  std::set<std::string> expected;
  for (const ManifestSlot &s : m_.slots)
    if (const char *prefix = optimizerPrefix(s))
      expected.insert(prefix + s.name);
  for (const auto &[name, t] : opt)
    if (!expected.count(name))
      return fail("%s: tensor '%s' is not optimizer state of the compiled "
                  "model",
                  optPath.c_str(), name.c_str());
  for (const ManifestSlot &s : m_.slots) {
    const char *prefix = optimizerPrefix(s);
    if (!prefix)
      continue;
    auto it = opt.find(prefix + s.name);
    if (it == opt.end())
      return fail("%s: tensor '%s%s' is missing", optPath.c_str(), prefix,
                  s.name.c_str());
    Extent e = layout_.extentOf(s, comm_.rank());
    if (it->second.dtype != "F32" || it->second.shape != e.shape)
      return fail("%s: tensor '%s%s' is not F32 of the model's shape",
                  optPath.c_str(), prefix, s.name.c_str());
    // Optimizer state is finite: a NaN or inf would poison every update.
    const float *values = reinterpret_cast<const float *>(it->second.bytes.data());
    for (size_t i = 0, n = it->second.bytes.size() / 4; i < n; ++i)
      if (!std::isfinite(values[i]))
        return fail("%s: tensor '%s%s' holds a non-finite value (%g) at "
                    "element %zu",
                    optPath.c_str(), prefix, s.name.c_str(), double(values[i]),
                    i);
    // This rank's rows under ZeRO-1 (the padding stays zero), else all.
    std::memset(bytesAt(s), 0, s.numel() * 4);
    std::memcpy(bytesAt(s), it->second.bytes.data() + e.begin * 4, e.count * 4);
  }
  step_ = state->step;
  updates_ = state->updates;
  dataPosition_ = state->dataPosition;
  std::istringstream(state->rng) >> rng_;
  if (comm_.rank() == 0)
    std::printf("resumed from %s at step %lld\n", dir->c_str(),
                (long long)step_);
  return Status::ok();
}

Status Trainer::saveCheckpoint(int64_t atStep) {
  // Whole tensors, so that any world size can load them: under ZeRO-1 every
  // rank takes part in gathering the optimizer state; rank 0 writes.
  INFIR2_RETURN_IF_ERROR(check(device_.download(0, m_.stateBytes, e_)));
  std::map<const ManifestSlot *, std::vector<float>> gathered;
  for (const ManifestSlot &s : m_.slots)
    if (StateLayout::isOptimizerState(s)) {
      Expected<std::vector<float>> whole = wholeState(s);
      if (!whole)
        return whole.failure();
      gathered[&s] = std::move(*whole);
    }
  if (comm_.rank() != 0)
    return Status::ok();
  auto writeFiles = [&](const std::string &tmp) -> Expected<FileDigests> {
    std::vector<std::unique_ptr<StoredTensor>> store;
    std::vector<std::pair<std::string, const StoredTensor *>> model, opt;
    for (const ManifestSlot &s : m_.slots) {
      const char *prefix = s.kind == "param" ? "" : optimizerPrefix(s);
      if (!prefix)
        continue;
      auto t = std::make_unique<StoredTensor>();
      t->shape = layout_.extentOf(s, comm_.rank()).shape;
      if (auto it = gathered.find(&s); it != gathered.end()) {
        t->dtype = "F32";
        const auto *p = reinterpret_cast<const uint8_t *>(it->second.data());
        t->bytes.assign(p, p + it->second.size() * 4);
      } else {
        // The working copy as it is stored: F32, BF16 or F16.
        t->dtype = storedDtype(s.dtype);
        t->bytes.assign(bytesAt(s), bytesAt(s) + s.bytes);
      }
      (s.kind == "param" ? model : opt).push_back({prefix + s.name, t.get()});
      store.push_back(std::move(t));
    }
    std::string error;
    FileDigests digests;
    for (auto [name, tensors] : {std::pair{"model.safetensors", &model},
                                 std::pair{"optimizer.safetensors", &opt}})
      if (!writeSafetensors(tmp + "/" + name, *tensors, error, &digests[name]))
        return Failure{error};
    return digests;
  };
  std::ostringstream rng;
  rng << rng_;
  std::string warning;
  if (Status s = publishCheckpoint(
          o_.save, TrainerState{atStep, updates_, dataPosition_, rng.str(), {}},
          writeFiles, warning);
      !s)
    return fail("checkpoint at step %lld: %s", (long long)atStep,
                s.message().c_str());
  if (!warning.empty())
    std::fprintf(stderr, "trainer: warning: %s\n", warning.c_str());
  return Status::ok();
}
