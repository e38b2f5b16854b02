//===- TrainerSteps.cpp - A training step and its one read-back -----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The loop's training step: zeroing the gradient accumulators, running the
// step function, and the one read-back per step that brings the losses and
// whether every gradient is finite.
//
//===----------------------------------------------------------------------===//

#include "loop/Trainer.h"

#include "infir2/runtime/Error.h"

#include <cstring>

using namespace infir2::rt;

Status Trainer::zeroGradients() {
  // One call for the accumulators the plan lays out one after the other.
  for (auto [offset, bytes] : gradRuns_)
    INFIR2_RETURN_IF_ERROR(s_.check(s_.device.zero(offset, bytes)));
  return Status::ok();
}

Expected<bool> Trainer::trainStep(int64_t atStep, std::string &refused) {
  s_.entering("train_step");
  int32_t rc = s_.model.trainStep(&s_.ctx);
  s_.entering("");
  if (rc == INFIR2RT_NONFINITE) {
    refused = "value (" + callError(s_.ctx) + ")";
    return false;
  }
  if (rc != INFIR2RT_OK)
    return fail("step %lld, training step: %s", (long long)atStep,
                callError(s_.ctx).c_str());
  // Not waited for: the step's read-back (readBack) waits for all of it.
  return true;
}

Expected<Trainer::ReadBack>
Trainer::readBack(const std::vector<int64_t> &losses) {
  // The padding between accumulators is zeroed with them, so it is finite:
  // one count over each run of FP32 accumulators.
  std::vector<int64_t> counts(gradRuns_.size());
  for (size_t i = 0; i < gradRuns_.size(); ++i) {
    Expected<int64_t> at = s_.device.keepNonFiniteCount(
        gradRuns_[i].first, gradRuns_[i].second / 4);
    INFIR2_RETURN_IF_ERROR(s_.check(at ? Status::ok() : at.failure()));
    counts[i] = *at;
  }
  std::vector<uint8_t> bytes;
  ReadBack r;
  // A call that failed on the device (a GPU reports an id out of range
  // here, not at the call) fails the step as the call would have.
  if (Status got = s_.device.collect(bytes, &r.refused); !got)
    return fail("step %lld, training step, on %s: %s", (long long)s_.step,
                s_.device.name().c_str(), got.message().c_str());
  Expected<const ManifestSlot *> loss = s_.layout.get(SlotKind::Output, "loss");
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
