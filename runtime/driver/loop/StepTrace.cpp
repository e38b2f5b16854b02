//===- StepTrace.cpp - A run's dumps for external checks ------------------===//
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

#include "loop/StepTrace.h"
#include "io/CheckpointIO.h"
#include "io/TensorDump.h"

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

/// The first step, for checks against the reference interpreter and
/// PyTorch: every parameter (its working value, as F32) under its name,
/// zero gradient accumulators as grad.<name> (the step's inputs), the batch
/// as input.<role>, the loss as output.loss, and each computed gradient as
/// gradient.<name>.
Status StepTrace::dumpStep() {
  INFIR2_RETURN_IF_ERROR(s_.check(s_.device.download(0, s_.m.stateBytes)));
  TensorDump dump;
  for (const ManifestSlot &s : s_.m.slots) {
    if (s.kind == SlotKind::Param)
      dump.add(s.name, s.shape, s_.hostValues(s));
    else if (s.kind == SlotKind::Grad) {
      dump.add("grad." + s.name, s.shape, std::vector<float>(s.numel()));
      dump.add("gradient." + s.name, s.shape, s_.hostValues(s));
    } else if (s.kind == SlotKind::Input && s.name != "learning_rate" &&
               s.name != "step" && s.name != "grad_scale")
      dump.add("input." + s.name, s.shape, s_.hostValues(s));
    else if (s.kind == SlotKind::Output && s.name == "loss")
      dump.add("output.loss", s.shape, s_.hostValues(s));
  }
  INFIR2_RETURN_IF_ERROR(dump.write(s_.o.dumpStep));
  Expected<float> loss = s_.scalar(SlotKind::Output, "loss");
  if (!loss)
    return loss.failure();
  std::printf("dumped the first step to %s (loss %.6f)\n",
              s_.o.dumpStep.c_str(), double(*loss));
  return Status::ok();
}

Status StepTrace::openOptimizerTrace() {
  if (s_.comm.size() > 1)
    return fail("--trace-optimizer runs one process, not %d ranks",
                s_.comm.size());
  std::error_code ec;
  std::filesystem::create_directories(s_.o.traceOptimizer, ec);
  if (ec)
    return fail("--trace-optimizer %s: %s", s_.o.traceOptimizer.c_str(),
                ec.message().c_str());
  // The state the first update starts from (step 0, or the one resumed).
  return writeOptimizerTrace(s_.step);
}

Status StepTrace::traceGradients(double lr, double gradScale) {
  trace_.clear();
  for (const ManifestSlot &s : s_.m.slots)
    if (s.kind == SlotKind::Grad) {
      INFIR2_RETURN_IF_ERROR(s_.download(s));
      trace_.add("grad." + s.name, s.shape, s_.hostValues(s));
    }
  trace_.add("lr", lr);
  trace_.add("grad_scale", gradScale);
  return Status::ok();
}

/// After step `atStep` the FP32 tensors AdamW updates (the masters, or the
/// parameters where they are FP32 without one) and both moments, with the
/// gradients traceGradients() took (none before the first update), into
/// DIR/step-NNNNNN.safetensors.
Status StepTrace::writeOptimizerTrace(int64_t atStep) {
  bool updated = !trace_.empty();
  for (const ManifestSlot &s : s_.m.slots) {
    const char *prefix = StateLayout::optimizerStatePrefix(s);
    if (s.kind == SlotKind::Param && !s_.layout.find(SlotKind::Master, s.name))
      prefix = "master."; // an FP32 parameter AdamW updates itself
    if (!prefix)
      continue;
    INFIR2_RETURN_IF_ERROR(s_.download(s));
    trace_.add(prefix + s.name, s_.layout.extentOf(s, 0).shape,
               s_.hostValues(s));
  }
  if (updated) {
    Expected<float> norm = s_.scalar(SlotKind::Output, "grad_norm");
    if (!norm)
      return norm.failure();
    trace_.add("grad_norm", *norm);
  }
  INFIR2_RETURN_IF_ERROR(trace_.write(
      (std::filesystem::path(s_.o.traceOptimizer) / checkpointName(atStep))
          .string() +
      ".safetensors"));
  trace_.clear();
  return Status::ok();
}
