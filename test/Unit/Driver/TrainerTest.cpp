//===- TrainerTest.cpp - The training loop on a model of the test's own ---===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The loop driven by a tiny hand-written "compiled model": four FP32 weights
// w, loss = sum_i (w_i - c)^2 with c from the batch's first target, its
// gradient accumulated, and plain SGD in the optimizer step. Checks what the
// loop owes any model: K train steps and one update per step, the schedule's
// learning rate and the gradient scale, skipped non-finite steps, call
// errors as values, the step hook, and an exact resume from a checkpoint.
//
//===----------------------------------------------------------------------===//

#include "loop/Trainer.h"

#include "TempDir.h"

#include "infir2/runtime/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

using namespace infir2::rt;
using infir2::rt::test::TempDir;

namespace {

enum Offset : int64_t {
  kW = 0,
  kMaster = 64,
  kGrad = 128,
  kIds = 192,
  kTargets = 256,
  kLr = 320,
  kScale = 384,
  kLoss = 448,
  kNorm = 512,
  kEval = 576,
  kStateBytes = 640,
};
constexpr int64_t kBatch = 1, kSeq = 4;

struct FakeModel {
  int trainCalls = 0, optimizerCalls = 0, evalCalls = 0;
  bool nanLoss = false, failTrain = false;
  std::vector<float> losses, lrs, scales;
} model;

float *f32(infir2rt_context *ctx, int64_t offset) {
  return reinterpret_cast<float *>(ctx->regions[0] + offset);
}
float target(infir2rt_context *ctx) {
  return float(reinterpret_cast<int32_t *>(ctx->regions[0] + kTargets)[0]) /
         256.0f;
}

int32_t trainStep(infir2rt_context *ctx) {
  ++model.trainCalls;
  if (model.failTrain) {
    infir2::rt::setCallError(ctx, nullptr, "boom at %s", "the fake op");
    return 1;
  }
  float c = target(ctx), loss = 0;
  for (int i = 0; i < 4; ++i) {
    float d = f32(ctx, kW)[i] - c;
    loss += d * d;
    f32(ctx, kGrad)[i] += 2 * d;
  }
  *f32(ctx, kLoss) = model.nanLoss ? NAN : loss;
  model.losses.push_back(loss);
  return 0;
}

int32_t optimizerStep(infir2rt_context *ctx) {
  ++model.optimizerCalls;
  float lr = *f32(ctx, kLr), scale = *f32(ctx, kScale), norm = 0;
  model.lrs.push_back(lr);
  model.scales.push_back(scale);
  for (int i = 0; i < 4; ++i) {
    float g = f32(ctx, kGrad)[i] * scale;
    norm += g * g;
    f32(ctx, kMaster)[i] -= lr * g;
    f32(ctx, kW)[i] = f32(ctx, kMaster)[i];
  }
  *f32(ctx, kNorm) = std::sqrt(norm);
  return 0;
}

int32_t evalStep(infir2rt_context *ctx) {
  ++model.evalCalls;
  *f32(ctx, kEval) = 1.0f;
  return 0;
}

Manifest fakeManifest() {
  Manifest m;
  m.stateBytes = kStateBytes;
  m.scratchBytes = 64;
  m.batch = kBatch;
  m.seq = kSeq;
  m.vocab = 256;
  auto slot = [&](SlotKind kind, const char *name, const char *dtype,
                  int64_t offset, std::vector<int64_t> shape,
                  const char *init = "zeros") {
    ManifestSlot s{kind, name, dtype, offset, 0, shape, init, 0.0};
    s.bytes = s.numel() * manifestDtypeSize(dtype);
    m.slots.push_back(s);
  };
  slot(SlotKind::Param, "w", "f32", kW, {4}, "ones");
  slot(SlotKind::Master, "w", "f32", kMaster, {4});
  slot(SlotKind::Grad, "w", "f32", kGrad, {4});
  slot(SlotKind::Input, "input_ids", "i32", kIds, {kBatch, kSeq});
  slot(SlotKind::Input, "targets", "i32", kTargets, {kBatch, kSeq});
  slot(SlotKind::Input, "learning_rate", "f32", kLr, {});
  slot(SlotKind::Input, "grad_scale", "f32", kScale, {});
  slot(SlotKind::Output, "loss", "f32", kLoss, {});
  slot(SlotKind::Output, "grad_norm", "f32", kNorm, {});
  slot(SlotKind::Output, "eval_loss", "f32", kEval, {});
  return m;
}

class RecordingHook : public StepHook {
public:
  void beforeStep(int rank, int64_t step) override {
    EXPECT_EQ(rank, 0);
    steps.push_back(step);
  }
  std::vector<int64_t> steps;
};

class TrainerTest : public ::testing::Test {
protected:
  void SetUp() override {
    model = FakeModel();
    data = dir.write("data.txt", "The quick brown fox jumps over the lazy dog");
    config.data = data;
    config.device = DeviceChoice::Cpu;
    config.steps = 6;
    config.logEvery = 1;
    config.lr = 0.1;
    config.schedule = LrSchedule::Constant;
  }

  Status train(RunConfig o, StepHook *hook = nullptr) {
    Communicator comm;
    Trainer t(fakeManifest(), std::move(o),
              {trainStep, optimizerStep, evalStep}, comm, hook);
    std::string notice;
    INFIR2_RETURN_IF_ERROR(t.open(notice));
    return t.run();
  }

  TempDir dir;
  std::string data;
  RunConfig config;
};

} // namespace

TEST_F(TrainerTest, AccumulatesThenUpdatesOncePerStep) {
  config.gradAccum = 3;
  RecordingHook hook;
  Status s = train(config, &hook);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(model.trainCalls, 18);
  EXPECT_EQ(model.optimizerCalls, 6);
  EXPECT_EQ(hook.steps, (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  for (float scale : model.scales)
    EXPECT_FLOAT_EQ(scale, 1.0f / 3.0f);
  for (float lr : model.lrs)
    EXPECT_FLOAT_EQ(lr, 0.1f);
  // SGD on a quadratic: the loss falls.
  EXPECT_LT(model.losses.back(), 0.5f * model.losses.front());
}

TEST_F(TrainerTest, FollowsTheSchedule) {
  config.schedule = LrSchedule::Cosine;
  config.warmup = 2;
  ASSERT_TRUE(train(config));
  ASSERT_EQ(model.lrs.size(), 6u);
  EXPECT_FLOAT_EQ(model.lrs[0], 0.05f);
  EXPECT_FLOAT_EQ(model.lrs[1], 0.1f);
  EXPECT_FLOAT_EQ(model.lrs[5], 0.01f); // the floor, min-lr-ratio 0.1
}

TEST_F(TrainerTest, NonFiniteStepsAreSkippedThenStop) {
  model.nanLoss = true;
  config.steps = 20;
  Status s = train(config);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "10 steps in a row had non-finite losses or "
                         "gradients (last: step 10); stopping");
  EXPECT_EQ(model.optimizerCalls, 0); // weights untouched
}

TEST_F(TrainerTest, CallErrorsComeBackAsValues) {
  model.failTrain = true;
  Status s = train(config);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "step 1, training step: boom at the fake op");
}

TEST_F(TrainerTest, ResumesExactlyFromACheckpoint) {
  config.save = dir / "ck";
  config.saveEvery = 3;
  config.logJsonl = dir / "full.jsonl";
  ASSERT_TRUE(train(config));
  std::vector<float> full = model.losses;
  ASSERT_EQ(full.size(), 6u);
  EXPECT_TRUE(
      std::filesystem::exists(dir / "ck/step-000003/trainer_state.json"));
  EXPECT_TRUE(
      std::filesystem::exists(dir / "ck/step-000006/model-00001-of-00001.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(dir / "ck/step-000003.tmp"));

  model = FakeModel();
  RunConfig resumed = config;
  resumed.save.clear();
  resumed.load = dir / "ck/step-000003";
  resumed.logJsonl = dir / "resumed.jsonl";
  RecordingHook hook;
  Status s = train(resumed, &hook);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(hook.steps, (std::vector<int64_t>{4, 5, 6}));
  ASSERT_EQ(model.losses.size(), 3u);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(model.losses[i], full[3 + i]) << "step " << 4 + i;
}

TEST_F(TrainerTest, EvaluatesOnHeldOutData) {
  config.evalData = data;
  config.evalEvery = 2;
  config.evalBatches = 2;
  ASSERT_TRUE(train(config));
  EXPECT_EQ(model.evalCalls, 3 * 2); // steps 2, 4 and 6
}

TEST_F(TrainerTest, RefusesAnotherMicroBatch) {
  config.microBatch = 8;
  Status s = train(config);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "--micro-batch 8, but the model was compiled for "
                         "micro-batch 1 (recompile with infir2-import "
                         "--micro-batch)");
}
