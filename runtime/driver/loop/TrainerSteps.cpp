//===- TrainerSteps.cpp - The trainer's calls into steps and device -------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// How the trainer runs the compiled step functions (telling a recorder which
// one runs) and moves slots and scalars between its host copy and the
// device.
//
//===----------------------------------------------------------------------===//

#include "loop/Trainer.h"

#include <cstring>

using namespace infir2::rt;

Status Trainer::check(Status s) {
  if (!s)
    return fail("%s: %s", device_.name().c_str(), s.message().c_str());
  return Status::ok();
}
Status Trainer::upload(const ManifestSlot &s) {
  return check(device_.upload(s.offset, s.bytes));
}
Status Trainer::download(const ManifestSlot &s) {
  return check(device_.download(s.offset, s.bytes));
}
Status Trainer::zeroGradients() {
  // One call for the accumulators the plan lays out one after the other.
  for (auto [offset, bytes] : gradRuns_)
    INFIR2_RETURN_IF_ERROR(check(device_.zero(offset, bytes)));
  return Status::ok();
}

Expected<float> Trainer::scalar(SlotKind kind, const char *name) {
  Expected<const ManifestSlot *> s = layout_.get(kind, name);
  if (!s)
    return s.failure();
  INFIR2_RETURN_IF_ERROR(download(**s));
  return readElement((*s)->dtype, bytesAt(**s), 0);
}

Status Trainer::setScalar(const char *name, float v) {
  Expected<const ManifestSlot *> s = layout_.get(SlotKind::Input, name);
  if (!s)
    return s.failure();
  writeElement((*s)->dtype, bytesAt(**s), 0, v);
  return upload(**s);
}

const char *Trainer::functionName(int32_t (*fn)(infir2rt_context *)) const {
  if (fn == model_.trainStep)
    return "train_step";
  if (fn == model_.optimizerStep)
    return "optimizer_step";
  if (fn == model_.evalStep)
    return "eval_step";
  if (fn == model_.decodeStep)
    return "decode_step";
  return fn == model_.quantizeWeights ? "quantize_weights" : "step";
}

Status Trainer::call(int32_t (*fn)(infir2rt_context *), const char *what,
                     int64_t atStep, bool wait) {
  entering(functionName(fn));
  int32_t rc = fn(&ctx_);
  entering("");
  if (rc != 0)
    return fail("step %lld, %s: %s", (long long)atStep, what,
                callError(ctx_).c_str());
  if (!wait)
    return Status::ok();
  if (Status done = device_.finish(); !done)
    return fail("step %lld, %s, on %s: %s", (long long)atStep, what,
                device_.name().c_str(), done.message().c_str());
  return Status::ok();
}

Expected<bool> Trainer::trainStep(int64_t atStep, std::string &refused) {
  entering("train_step");
  int32_t rc = model_.trainStep(&ctx_);
  entering("");
  if (rc == INFIR2RT_NONFINITE) {
    refused = "value (" + callError(ctx_) + ")";
    return false;
  }
  if (rc != INFIR2RT_OK)
    return fail("step %lld, training step: %s", (long long)atStep,
                callError(ctx_).c_str());
  // Not waited for: the step's read-back (readBack) waits for all of it.
  return true;
}

Expected<Trainer::ReadBack>
Trainer::readBack(const std::vector<int64_t> &losses) {
  // The padding between accumulators is zeroed with them, so it is finite:
  // one count over each run of FP32 accumulators.
  std::vector<int64_t> counts(gradRuns_.size());
  for (size_t i = 0; i < gradRuns_.size(); ++i) {
    Expected<int64_t> at =
        device_.keepNonFiniteCount(gradRuns_[i].first, gradRuns_[i].second / 4);
    INFIR2_RETURN_IF_ERROR(check(at ? Status::ok() : at.failure()));
    counts[i] = *at;
  }
  std::vector<uint8_t> bytes;
  ReadBack r;
  // A call that failed on the device (a GPU reports an id out of range
  // here, not at the call) fails the step as the call would have.
  if (Status got = device_.collect(bytes, &r.refused); !got)
    return fail("step %lld, training step, on %s: %s", (long long)step_,
                device_.name().c_str(), got.message().c_str());
  Expected<const ManifestSlot *> loss = layout_.get(SlotKind::Output, "loss");
  if (!loss)
    return loss.failure();
  for (int64_t at : losses)
    r.loss += readElement((*loss)->dtype, bytes.data() + at, 0);
  for (int64_t at : counts) {
    int64_t bad;
    std::memcpy(&bad, bytes.data() + at, sizeof bad);
    r.gradientsFinite = r.gradientsFinite && bad == 0;
  }
  return r;
}
