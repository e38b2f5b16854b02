//===- Trainer.cpp - The training loop ------------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "loop/Trainer.h"

#include "loop/StopSignal.h"

#include "DataSource.h"
#include "io/CheckpointIO.h"
#include "io/Metrics.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

using namespace infir2::rt;

StepHook::~StepHook() = default;

Trainer::Trainer(Manifest manifest, RunConfig config, ModelEntryPoints model,
                 Communicator &comm, StepHook *hook)
    : layout_(std::move(manifest)), m_(layout_.manifest()),
      o_(std::move(config)), schedule_(Schedule::fromConfig(o_)), model_(model),
      comm_(comm), hook_(hook), rng_(o_.seed),
      gradRuns_(layout_.runsOf(SlotKind::Grad)) {}

Status Trainer::open(std::string &notice) {
  residentAtOpen_ = residentBytes();
  comm_.setTimeout(o_.collectiveTimeout);
  INFIR2_RETURN_IF_ERROR(device_.open(o_.device, localRank(), m_.stateBytes,
                                      m_.scratchBytes, notice));
  if (!o_.recordCalls.empty()) {
    recorder_ = std::make_unique<CallRecorder>(device_.backend());
    device_.wrap(recorder_->backend());
  }
  device_.attach(ctx_);
  if (!device_.onGpu() && comm_.rank() == 0)
    std::fprintf(stderr, "trainer: CPU GEMMs: %s\n", infir2rt_cpu_gemm_info());
  if (device_.onGpu() && comm_.size() > 1) {
    std::string why;
    comm_.useDeviceCollectives(why);
    if (!why.empty() && comm_.rank() == 0)
      std::fprintf(stderr, "trainer: %s\n", why.c_str());
  }
  comm_.attach(ctx_);
  return Status::ok();
}

Status Trainer::fillBatch(TokenSource &source, int64_t &position, bool shard) {
  Expected<const ManifestSlot *> ids =
      layout_.get(SlotKind::Input, "input_ids");
  if (!ids)
    return ids.failure();
  Expected<const ManifestSlot *> targets =
      layout_.get(SlotKind::Input, "targets");
  if (!targets)
    return targets.failure();
  // Inputs the model does not take go to buffers of their own: a model
  // without a loss mask trains on every target, one with positions shared
  // by the batch ([seq]) or without segments reads one stream per sequence
  // (run() refuses masked or packed data for them at start).
  size_t tokens = size_t(m_.batch * m_.seq);
  weights_.resize(tokens);
  positions_.resize(tokens);
  segments_.resize(tokens);
  const ManifestSlot *mask = layout_.find(SlotKind::Input, "loss_mask");
  const ManifestSlot *pos = layout_.find(SlotKind::Input, "positions");
  const ManifestSlot *seg = layout_.find(SlotKind::Input, "segments");
  bool perToken = pos && pos->numel() == m_.batch * m_.seq;
  Batch batch{at<int32_t>(**ids), at<int32_t>(**targets),
              mask ? at<float>(*mask) : weights_.data(),
              perToken ? at<int32_t>(*pos) : positions_.data(),
              seg ? at<int32_t>(*seg) : segments_.data()};
  INFIR2_RETURN_IF_ERROR(fillSequences(source, position, m_.batch, m_.seq,
                                       shard ? comm_.size() : 1,
                                       shard ? comm_.rank() : 0, batch));
  if (pos && !perToken)
    for (int64_t i = 0, n = pos->numel(); i < n; ++i)
      at<int32_t>(*pos)[i] = int32_t(i % m_.seq);
  for (const char *role :
       {"input_ids", "targets", "loss_mask", "positions", "segments"})
    if (const ManifestSlot *s = layout_.find(SlotKind::Input, role))
      INFIR2_RETURN_IF_ERROR(upload(*s));
  return Status::ok();
}

Status Trainer::checkPackingSupported() {
  const ManifestSlot *pos = layout_.find(SlotKind::Input, "positions");
  bool separates = layout_.find(SlotKind::Input, "segments") && pos &&
                   pos->numel() == m_.batch * m_.seq;
  for (auto [spec, source] : {std::pair{&o_.data, train_.get()},
                              std::pair{&o_.evalData, held_.get()}})
    if (source && source->packed() && !separates)
      return fail("%s: whole documents are packed into each sample "
                  "(--packing documents, the default with a loss mask), but "
                  "the compiled model takes no segment ids and per-token "
                  "positions to keep them apart (import it with this "
                  "infir2-import, or pass --packing stream)",
                  spec->c_str());
  return Status::ok();
}

Expected<Trainer::Evaluation> Trainer::evaluate(int64_t batches) {
  int64_t position = 0;
  int64_t all = std::max<int64_t>(1, held_->samplesPerEpoch() / m_.batch);
  batches = batches ? std::min(batches, all) : all;
  // Each batch's loss is the mean over its masked-in targets; the held-out
  // loss weighs the batches by those counts, so that it is the mean over
  // every target evaluated.
  const ManifestSlot *mask = layout_.find(SlotKind::Input, "loss_mask");
  Evaluation result;
  double total = 0.0, weight = 0.0;
  for (int64_t i = 0; i < batches; ++i) {
    INFIR2_RETURN_IF_ERROR(fillBatch(*held_, position, /*shard=*/false));
    INFIR2_RETURN_IF_ERROR(call(model_.evalStep, "evaluation", step_));
    Expected<float> loss = scalar(SlotKind::Output, "eval_loss");
    if (!loss)
      return loss.failure();
    const float *w = mask ? at<float>(*mask) : weights_.data();
    double n = 0.0;
    for (int64_t t = 0, count = m_.batch * m_.seq; t < count; ++t) {
      n += w[t];
      result.tokens += w[t] != 0.0f;
    }
    if (n > 0) {
      total += double(*loss) * n;
      weight += n;
    }
  }
  result.loss = weight > 0 ? total / weight : std::nan("");
  result.batches = batches;
  return result;
}

Status Trainer::evaluateOnly() {
  Expected<Evaluation> e = evaluate(o_.evalBatches);
  if (!e)
    return e.failure();
  if (comm_.rank() != 0)
    return Status::ok();
  std::printf("eval: loss %.4f  perplexity %.2f  %lld tokens in %lld "
              "batches of %lld x %lld (%s)\n",
              e->loss, std::exp(e->loss), (long long)e->tokens,
              (long long)e->batches, (long long)m_.batch, (long long)m_.seq,
              o_.evalData.c_str());
  if (o_.logJsonl.empty())
    return Status::ok();
  JsonlLog jsonl;
  INFIR2_RETURN_IF_ERROR(jsonl.open(o_.logJsonl, /*append=*/false));
  StepMetrics metrics;
  metrics.step = step_;
  metrics.evalLoss = e->loss;
  metrics.evalTokens = e->tokens;
  return jsonl.write(metrics);
}

Status Trainer::run() {
  if (o_.microBatch && o_.microBatch != m_.batch)
    return fail("--micro-batch %lld, but the model was compiled for "
                "micro-batch %lld (recompile with infir2-import "
                "--micro-batch)",
                (long long)o_.microBatch, (long long)m_.batch);
  if (m_.zero1WorldSize && m_.zero1WorldSize != comm_.size())
    return fail("this trainer shards its optimizer state over %lld ranks "
                "(ZeRO-1, compiled with world-size=%lld) but was started as "
                "%d; run it with mpirun -np %lld, or recompile for %d",
                (long long)m_.zero1WorldSize, (long long)m_.zero1WorldSize,
                comm_.size(), (long long)m_.zero1WorldSize, comm_.size());
  SourceOptions data;
  data.seq = m_.seq;
  data.vocab = m_.vocab;
  data.seed = uint64_t(o_.seed);
  data.format = o_.dataFormat;
  data.packing = o_.packing;
  for (auto [spec, source, shuffle] : {std::tuple{&o_.data, &train_, true},
                                       std::tuple{&o_.evalData, &held_, false}})
    if (!spec->empty()) {
      data.shuffle = shuffle; // held-out data is read in its own order
      data.lossMask = shuffle ? o_.lossMask : ""; // --loss-mask is --data's
      Expected<std::unique_ptr<TokenSource>> s = openTokenSource(*spec, data);
      if (!s)
        return s.failure();
      if ((*s)->masked() && !layout_.find(SlotKind::Input, "loss_mask"))
        return fail("%s has loss masks, but the compiled model takes no "
                    "loss_mask input (import it with infir2-import)",
                    spec->c_str());
      *source = std::move(*s);
    }
  INFIR2_RETURN_IF_ERROR(checkPackingSupported());
  if (!o_.save.empty() && comm_.rank() == 0)
    INFIR2_RETURN_IF_ERROR(prepareSaveDir(o_.save));
  INFIR2_RETURN_IF_ERROR(
      layout_.initialize(device_.state(), rng_, comm_.rank()));
  if (!o_.load.empty())
    INFIR2_RETURN_IF_ERROR(loadCheckpoint(o_.load));
  INFIR2_RETURN_IF_ERROR(check(device_.upload(0, m_.stateBytes)));
  // The training and evaluation steps read the FP8 weights from the cache,
  // which the optimizer step keeps current from here on.
  if (model_.quantizeWeights)
    INFIR2_RETURN_IF_ERROR(
        call(model_.quantizeWeights, "quantizing the FP8 weights", step_));
  else if (!layout_.runsOf(SlotKind::Fp8Cache).empty())
    return fail("the compiled model has an FP8 weight cache but no "
                "infir2_quantize_weights to fill it (a model object and "
                "manifest that do not belong together?): recompile it");
  if (!o_.exportFp8.empty())
    return comm_.rank() == 0 ? exportFp8(o_.exportFp8) : Status::ok();
  if (o_.generate)
    return generate();
  if (o_.evalOnly) {
    if (!held_)
      return fail("--eval-only needs --eval-data");
    return evaluateOnly();
  }

  if (!o_.dumpStep.empty()) {
    if (comm_.size() > 1)
      return fail("--dump-step runs one process, not %d ranks", comm_.size());
    INFIR2_RETURN_IF_ERROR(zeroGradients());
    if (!train_)
      return fail("--dump-step needs --data");
    INFIR2_RETURN_IF_ERROR(fillBatch(*train_, dataPosition_, /*shard=*/false));
    INFIR2_RETURN_IF_ERROR(call(model_.trainStep, "training step", 1));
    return dumpStep();
  }
  if (!o_.traceOptimizer.empty())
    INFIR2_RETURN_IF_ERROR(openOptimizerTrace());
  INFIR2_RETURN_IF_ERROR(trainLoop());
  if (recorder_ && comm_.rank() == 0)
    return recorder_->write(o_.recordCalls);
  return Status::ok();
}

Status Trainer::trainLoop() {
  JsonlLog jsonl;
  bool lead = comm_.rank() == 0;
  if (!o_.logJsonl.empty() && lead)
    INFIR2_RETURN_IF_ERROR(jsonl.open(o_.logJsonl, /*append=*/step_ > 0));
  int64_t tokensPerStep = m_.batch * m_.seq * o_.gradAccum * comm_.size();
  if (lead)
    std::printf("training: %lld steps of %lld tokens (micro-batch %lld x %lld, "
                "%lld accumulated, %d rank%s), %.1f MiB state, %.1f MiB "
                "scratch, on %s\n",
                (long long)o_.steps, (long long)tokensPerStep,
                (long long)m_.batch, (long long)m_.seq, (long long)o_.gradAccum,
                comm_.size(), comm_.size() > 1 ? "s" : "",
                m_.stateBytes / 1048576.0, m_.scratchBytes / 1048576.0,
                device_.name().c_str());
  if (lead)
    std::printf("data: %s\n", train_->describe().c_str());
  auto start = std::chrono::steady_clock::now();
  auto lastLog = start;
  int64_t tokensSinceLog = 0, skippedInARow = 0, startStep = step_;
  double lossSinceLog = 0.0;
  int64_t stepsSinceLog = 0;
  int64_t lastSaved = -1;
  // The checkpoint due at this step (every --save-every, and the last),
  // whether the step updated the weights or was skipped.
  auto saveIfDue = [&]() -> Status {
    if (o_.save.empty() ||
        !((o_.saveEvery && step_ % o_.saveEvery == 0) || step_ == o_.steps))
      return Status::ok();
    INFIR2_RETURN_IF_ERROR(saveCheckpoint(step_));
    comm_.barrier(/*unbounded=*/true); // rank 0 wrote the checkpoint alone
    lastSaved = step_;
    return Status::ok();
  };
  catchStopSignals();
  while (step_ < o_.steps) {
    Expected<bool> stop = stopRequested(lastSaved);
    if (!stop)
      return stop.failure();
    if (*stop)
      return Status::ok();
    ++step_;
    if (recorder_) { // everything up to the next step's start is this one's
      recorder_->endStep();
      recorder_->beginStep();
    }
    if (hook_)
      hook_->beforeStep(comm_.rank(), step_);
    INFIR2_RETURN_IF_ERROR(zeroGradients());
    // A step the runtime refused as non-finite (an infinite or NaN amax in
    // the FP8 recipe) is skipped like a non-finite loss.
    std::string refused;
    bool computedAll = true;
    std::vector<int64_t> losses; // where each micro-batch's loss is read back
    for (int64_t k = 0; k < o_.gradAccum; ++k) {
      INFIR2_RETURN_IF_ERROR(fillBatch(*train_, dataPosition_, /*shard=*/true));
      Expected<bool> computed = trainStep(step_, refused);
      if (!computed)
        return computed.failure();
      if (!*computed) {
        computedAll = false;
        continue; // the batch is consumed, as for a non-finite loss
      }
      Expected<const ManifestSlot *> slot =
          layout_.get(SlotKind::Output, "loss");
      if (!slot)
        return slot.failure();
      Expected<int64_t> at = device_.keep((*slot)->offset, (*slot)->bytes);
      INFIR2_RETURN_IF_ERROR(check(at ? Status::ok() : at.failure()));
      losses.push_back(*at);
    }
    // One round trip: the losses and the gradients' non-finite counts.
    Expected<ReadBack> back = readBack(losses);
    if (!back)
      return back.failure();
    if (!back->refused.empty()) { // a GPU reports its refusals here
      computedAll = false;
      refused = "value (" + back->refused + ")";
    }
    double loss = computedAll ? back->loss : std::nan("");
    // The group's mean loss; every rank takes the same skip decision, or
    // the ranks that skip would leave the others waiting in the all-reduce.
    loss = comm_.sum(loss) / double(o_.gradAccum * comm_.size());
    bool finite = back->gradientsFinite;
    bool bad = comm_.max(std::isfinite(loss) && finite ? 0.0 : 1.0) != 0.0;
    tokensSinceLog += tokensPerStep;
    if (bad) {
      std::string reason =
          "non-finite " + (!refused.empty()      ? refused
                           : std::isfinite(loss) ? std::string("gradient")
                                                 : std::string("loss"));
      if (lead) {
        std::fprintf(stderr,
                     "trainer: step %lld: %s; step skipped, weights "
                     "untouched\n",
                     (long long)step_, reason.c_str());
        StepMetrics skippedStep;
        skippedStep.step = step_;
        skippedStep.skipped = reason;
        INFIR2_RETURN_IF_ERROR(jsonl.write(skippedStep));
      }
      if (++skippedInARow >= o_.maxSkipped)
        return fail("%lld steps in a row had non-finite losses or gradients "
                    "(last: step %lld); stopping",
                    (long long)skippedInARow, (long long)step_);
      // A skipped step is still a step: the checkpoint due at it (the last
      // step's, say) is written, holding the untouched weights.
      INFIR2_RETURN_IF_ERROR(saveIfDue());
      continue;
    }
    skippedInARow = 0;
    double lr = schedule_.at(step_);
    INFIR2_RETURN_IF_ERROR(setScalar("learning_rate", float(lr)));
    ++updates_;
    if (layout_.find(SlotKind::Input,
                     "step")) // AdamW's bias correction; SGD has none
      INFIR2_RETURN_IF_ERROR(setScalar("step", float(updates_)));
    double gradScale = 1.0 / double(o_.gradAccum * comm_.size());
    INFIR2_RETURN_IF_ERROR(setScalar("grad_scale", float(gradScale)));
    if (!o_.traceOptimizer.empty())
      INFIR2_RETURN_IF_ERROR(traceGradients(lr, gradScale));
    // Not waited for: reading the gradient norm waits for it.
    INFIR2_RETURN_IF_ERROR(call(model_.optimizerStep, "optimizer step", step_,
                                /*wait=*/false));
    if (!o_.traceOptimizer.empty())
      INFIR2_RETURN_IF_ERROR(writeOptimizerTrace(step_));
    Expected<float> gradNorm = scalar(SlotKind::Output, "grad_norm");
    if (!gradNorm)
      return gradNorm.failure();
    lossSinceLog += loss;
    ++stepsSinceLog;

    bool evalNow = held_ && ((o_.evalEvery && step_ % o_.evalEvery == 0) ||
                             step_ == o_.steps);
    bool logNow = step_ % o_.logEvery == 0 || step_ == o_.steps || evalNow;
    StepMetrics metrics;
    if (evalNow) {
      Expected<Evaluation> evaluation = evaluate(o_.evalBatches);
      if (!evaluation)
        return evaluation.failure();
      metrics.evalLoss = evaluation->loss;
    }
    if (logNow && lead) {
      auto now = std::chrono::steady_clock::now();
      double dt = std::chrono::duration<double>(now - lastLog).count();
      double elapsed = std::chrono::duration<double>(now - start).count();
      metrics.step = step_;
      metrics.steps = o_.steps;
      metrics.loss = lossSinceLog / double(std::max<int64_t>(stepsSinceLog, 1));
      metrics.lr = lr;
      metrics.gradNorm = *gradNorm;
      metrics.tokensPerSecond = tokensSinceLog / std::max(dt, 1e-9);
      metrics.etaSeconds =
          elapsed / double(step_ - startStep) * double(o_.steps - step_);
      std::printf("%s\n", progressLine(metrics).c_str());
      std::fflush(stdout);
      INFIR2_RETURN_IF_ERROR(jsonl.write(metrics));
      lastLog = now;
      tokensSinceLog = 0;
      lossSinceLog = 0.0;
      stepsSinceLog = 0;
    }
    INFIR2_RETURN_IF_ERROR(saveIfDue());
  }
  if (recorder_)
    recorder_->endStep();
  if (lead)
    reportMemory();
  return Status::ok();
}

Expected<bool> Trainer::stopRequested(int64_t lastSaved) {
  // Every rank takes the same decision (mpirun passes a SIGTERM to all
  // ranks, but not at the same instant).
  int signal = int(comm_.max(double(stopSignal())));
  if (!signal)
    return false;
  stoppedBy_ = signal;
  std::string where = o_.save.empty() ? "nothing saved (no --save)"
                      : step_ == 0    ? "nothing saved (no step finished)"
                                      : "checkpoint saved in " + o_.save;
  if (!o_.save.empty() && step_ > 0 && lastSaved != step_) {
    INFIR2_RETURN_IF_ERROR(saveCheckpoint(step_));
    comm_.barrier(/*unbounded=*/true); // rank 0 wrote the checkpoint alone
  }
  if (comm_.rank() <= 0)
    std::fprintf(stderr, "trainer: stopped by %s after step %lld; %s\n",
                 stopSignalName(signal), (long long)step_, where.c_str());
  return true;
}
