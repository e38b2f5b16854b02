//===- TrainerTrace.cpp - The loop's dumps for external checks ------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// --dump-step (the first step's weights, batch, loss and gradients) and
// --trace-optimizer (every optimizer step's gradients and the state it
// produced), written as FP32 safetensors for checks against the reference
// interpreter and PyTorch (test/python/).
//
//===----------------------------------------------------------------------===//

#include "io/CheckpointIO.h"
#include "io/TensorDump.h"
#include "loop/Trainer.h"

#include <filesystem>

using namespace infir2::rt;

void TensorDump::add(const std::string &name, std::vector<int64_t> shape,
                     const std::vector<float> &values) {
  auto t = std::make_unique<StoredTensor>();
  t->dtype = "F32";
  t->shape = std::move(shape);
  const auto *bytes = reinterpret_cast<const uint8_t *>(values.data());
  t->bytes.assign(bytes, bytes + values.size() * sizeof(float));
  order_.push_back({name, t.get()});
  store_.push_back(std::move(t));
}

void TensorDump::clear() {
  order_.clear();
  store_.clear();
}

Status TensorDump::write(const std::string &path) const {
  std::string error;
  if (!writeSafetensors(path, order_, error))
    return Failure{error};
  return Status::ok();
}

std::vector<float> Trainer::hostValues(const ManifestSlot &s) {
  std::vector<float> values(size_t(s.numel()));
  for (int64_t i = 0, n = s.numel(); i < n; ++i)
    values[size_t(i)] = readElement(s.dtype, bytesAt(s), i);
  return values;
}

/// The first step, for checks against the reference interpreter and
/// PyTorch: every parameter (its working value, as F32) under its name,
/// zero gradient accumulators as grad.<name> (the step's inputs), the batch
/// as input.<role>, the loss as output.loss, and each computed gradient as
/// gradient.<name>.
Status Trainer::dumpStep() {
  INFIR2_RETURN_IF_ERROR(check(device_.download(0, m_.stateBytes)));
  TensorDump dump;
  for (const ManifestSlot &s : m_.slots) {
    if (s.kind == SlotKind::Param)
      dump.add(s.name, s.shape, hostValues(s));
    else if (s.kind == SlotKind::Grad) {
      dump.add("grad." + s.name, s.shape, std::vector<float>(s.numel()));
      dump.add("gradient." + s.name, s.shape, hostValues(s));
    } else if (s.kind == SlotKind::Input && s.name != "learning_rate" &&
               s.name != "step" && s.name != "grad_scale")
      dump.add("input." + s.name, s.shape, hostValues(s));
    else if (s.kind == SlotKind::Output && s.name == "loss")
      dump.add("output.loss", s.shape, hostValues(s));
  }
  INFIR2_RETURN_IF_ERROR(dump.write(o_.dumpStep));
  Expected<float> loss = scalar(SlotKind::Output, "loss");
  if (!loss)
    return loss.failure();
  std::printf("dumped the first step to %s (loss %.6f)\n", o_.dumpStep.c_str(),
              double(*loss));
  return Status::ok();
}

Status Trainer::openOptimizerTrace() {
  if (comm_.size() > 1)
    return fail("--trace-optimizer runs one process, not %d ranks",
                comm_.size());
  std::error_code ec;
  std::filesystem::create_directories(o_.traceOptimizer, ec);
  if (ec)
    return fail("--trace-optimizer %s: %s", o_.traceOptimizer.c_str(),
                ec.message().c_str());
  // The state the first update starts from (step 0, or the one resumed).
  return writeOptimizerTrace(step_);
}

Status Trainer::traceGradients(double lr, double gradScale) {
  trace_.clear();
  for (const ManifestSlot &s : m_.slots)
    if (s.kind == SlotKind::Grad) {
      INFIR2_RETURN_IF_ERROR(download(s));
      trace_.add("grad." + s.name, s.shape, hostValues(s));
    }
  trace_.add("lr", lr);
  trace_.add("grad_scale", gradScale);
  return Status::ok();
}

/// After step `atStep` the FP32 tensors AdamW updates (the masters, or the
/// parameters where they are FP32 without one) and both moments, with the
/// gradients traceGradients() took (none before the first update), into
/// DIR/step-NNNNNN.safetensors.
Status Trainer::writeOptimizerTrace(int64_t atStep) {
  bool updated = !trace_.empty();
  for (const ManifestSlot &s : m_.slots) {
    const char *prefix = StateLayout::optimizerStatePrefix(s);
    if (s.kind == SlotKind::Param && !layout_.find(SlotKind::Master, s.name))
      prefix = "master."; // an FP32 parameter AdamW updates itself
    if (!prefix)
      continue;
    INFIR2_RETURN_IF_ERROR(download(s));
    trace_.add(prefix + s.name, layout_.extentOf(s, 0).shape, hostValues(s));
  }
  if (updated) {
    Expected<float> norm = scalar(SlotKind::Output, "grad_norm");
    if (!norm)
      return norm.failure();
    trace_.add("grad_norm", *norm);
  }
  INFIR2_RETURN_IF_ERROR(trace_.write(
      (std::filesystem::path(o_.traceOptimizer) / checkpointName(atStep))
          .string() +
      ".safetensors"));
  trace_.clear();
  return Status::ok();
}
