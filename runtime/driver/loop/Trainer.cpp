//===- Trainer.cpp - The training loop ------------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "loop/Trainer.h"

#include "loop/Fp8Export.h"
#include "loop/Generator.h"
#include "loop/StopSignal.h"

#include "DataSource.h"
#include "io/CheckpointIO.h"
#include "io/Metrics.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

using namespace infir2::rt;

StepHook::~StepHook() = default;

Trainer::Trainer(Manifest manifest, RunConfig config, ModelEntryPoints model,
                 Communicator &comm, StepHook *hook)
    : s_(std::move(manifest), std::move(config), model, comm),
      schedule_(Schedule::fromConfig(s_.o)), hook_(hook),
      gradRuns_(s_.layout.runsOf(SlotKind::Grad)) {}

Status Trainer::open(std::string &notice) {
  residentAtOpen_ = residentBytes();
  return s_.open(notice);
}

Status Trainer::fillBatch(TokenSource &source, int64_t &position, bool shard) {
  Expected<const ManifestSlot *> ids =
      s_.layout.get(SlotKind::Input, "input_ids");
  if (!ids)
    return ids.failure();
  Expected<const ManifestSlot *> targets =
      s_.layout.get(SlotKind::Input, "targets");
  if (!targets)
    return targets.failure();
  // Inputs the model does not take go to buffers of their own: a model
  // without a loss mask trains on every target, one with positions shared
  // by the batch ([seq]) or without segments reads one stream per sequence
  // (run() refuses masked or packed data for them at start).
  size_t tokens = size_t(s_.m.batch * s_.m.seq);
  weights_.resize(tokens);
  positions_.resize(tokens);
  segments_.resize(tokens);
  const ManifestSlot *mask = s_.layout.find(SlotKind::Input, "loss_mask");
  const ManifestSlot *pos = s_.layout.find(SlotKind::Input, "positions");
  const ManifestSlot *seg = s_.layout.find(SlotKind::Input, "segments");
  bool perToken = pos && pos->numel() == s_.m.batch * s_.m.seq;
  Batch batch{s_.at<int32_t>(**ids), s_.at<int32_t>(**targets),
              mask ? s_.at<float>(*mask) : weights_.data(),
              perToken ? s_.at<int32_t>(*pos) : positions_.data(),
              seg ? s_.at<int32_t>(*seg) : segments_.data()};
  INFIR2_RETURN_IF_ERROR(fillSequences(source, position, s_.m.batch, s_.m.seq,
                                       shard ? s_.dp->size() : 1,
                                       shard ? s_.dp->rank() : 0, batch));
  if (pos && !perToken)
    for (int64_t i = 0, n = pos->numel(); i < n; ++i)
      s_.at<int32_t>(*pos)[i] = int32_t(i % s_.m.seq);
  for (const char *role :
       {"input_ids", "targets", "loss_mask", "positions", "segments"})
    if (const ManifestSlot *s = s_.layout.find(SlotKind::Input, role))
      INFIR2_RETURN_IF_ERROR(s_.upload(*s));
  return Status::ok();
}

Status Trainer::checkPackingSupported() {
  const ManifestSlot *pos = s_.layout.find(SlotKind::Input, "positions");
  bool separates = s_.layout.find(SlotKind::Input, "segments") && pos &&
                   pos->numel() == s_.m.batch * s_.m.seq;
  for (auto [spec, source] : {std::pair{&s_.o.data, train_.get()},
                              std::pair{&s_.o.evalData, held_.get()}})
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
  int64_t all = std::max<int64_t>(1, held_->samplesPerEpoch() / s_.m.batch);
  batches = batches ? std::min(batches, all) : all;
  // Each batch's loss is the mean over its masked-in targets; the held-out
  // loss weighs the batches by those counts, so that it is the mean over
  // every target evaluated.
  const ManifestSlot *mask = s_.layout.find(SlotKind::Input, "loss_mask");
  Evaluation result;
  double total = 0.0, weight = 0.0;
  for (int64_t i = 0; i < batches; ++i) {
    INFIR2_RETURN_IF_ERROR(fillBatch(*held_, position, /*shard=*/false));
    INFIR2_RETURN_IF_ERROR(s_.call(s_.model.evalStep, "evaluation", s_.step));
    Expected<float> loss = s_.scalar(SlotKind::Output, "eval_loss");
    if (!loss)
      return loss.failure();
    const float *w = mask ? s_.at<float>(*mask) : weights_.data();
    double n = 0.0;
    for (int64_t t = 0, count = s_.m.batch * s_.m.seq; t < count; ++t) {
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
  Expected<Evaluation> e = evaluate(s_.o.evalBatches);
  if (!e)
    return e.failure();
  if (s_.comm.rank() != 0)
    return Status::ok();
  std::printf("eval: loss %.4f  perplexity %.2f  %lld tokens in %lld "
              "batches of %lld x %lld (%s)\n",
              e->loss, std::exp(e->loss), (long long)e->tokens,
              (long long)e->batches, (long long)s_.m.batch, (long long)s_.m.seq,
              s_.o.evalData.c_str());
  if (s_.o.logJsonl.empty())
    return Status::ok();
  JsonlLog jsonl;
  INFIR2_RETURN_IF_ERROR(jsonl.open(s_.o.logJsonl, /*append=*/false));
  StepMetrics metrics;
  metrics.step = s_.step;
  metrics.evalLoss = e->loss;
  metrics.evalTokens = e->tokens;
  return jsonl.write(metrics);
}

Status Trainer::run() {
  if (s_.o.microBatch && s_.o.microBatch != s_.m.batch)
    return fail("--micro-batch %lld, but the model was compiled for "
                "micro-batch %lld (recompile with infir2-import "
                "--micro-batch)",
                (long long)s_.o.microBatch, (long long)s_.m.batch);
  if (s_.m.tensorParallel > 1)
    for (auto [set, flag] : {std::pair{!s_.o.exportFp8.empty(), "--export-fp8"},
                             std::pair{s_.o.generate, "--generate"},
                             std::pair{!s_.o.dumpStep.empty(), "--dump-step"}})
      if (set)
        return fail("%s is not implemented for a tensor-parallel trainer "
                    "yet (its checkpoints hold whole tensors: load one in a "
                    "trainer compiled at tensor-parallel=1)",
                    flag);
  if (s_.m.zero1WorldSize && s_.m.zero1WorldSize != s_.dp->size()) {
    // Under tensor parallelism the data-parallel group is the world over N.
    int64_t tp = s_.m.tensorParallel, want = s_.m.zero1WorldSize * tp;
    return fail("this trainer shards its optimizer state over %lld "
                "data-parallel ranks (ZeRO-1, compiled with world-size=%lld) "
                "but was started as %d%s; run it with mpirun -np %lld, or "
                "recompile for %lld",
                (long long)s_.m.zero1WorldSize, (long long)s_.m.zero1WorldSize,
                s_.comm.size(),
                tp > 1 ? (" (" + std::to_string(s_.dp->size()) +
                          " data-parallel of tensor-parallel " +
                          std::to_string(tp) + ")")
                             .c_str()
                       : "",
                (long long)want, (long long)(s_.comm.size() / tp));
  }
  SourceOptions data;
  data.seq = s_.m.seq;
  data.vocab = s_.m.vocab;
  data.seed = uint64_t(s_.o.seed);
  data.format = s_.o.dataFormat;
  data.packing = s_.o.packing;
  for (auto [spec, source, shuffle] :
       {std::tuple{&s_.o.data, &train_, true},
        std::tuple{&s_.o.evalData, &held_, false}})
    if (!spec->empty()) {
      data.shuffle = shuffle; // held-out data is read in its own order
      data.lossMask = shuffle ? s_.o.lossMask : ""; // --loss-mask is --data's
      Expected<std::unique_ptr<TokenSource>> s = openTokenSource(*spec, data);
      if (!s)
        return s.failure();
      if ((*s)->masked() && !s_.layout.find(SlotKind::Input, "loss_mask"))
        return fail("%s has loss masks, but the compiled model takes no "
                    "loss_mask input (import it with infir2-import)",
                    spec->c_str());
      *source = std::move(*s);
    }
  INFIR2_RETURN_IF_ERROR(checkPackingSupported());
  if (!s_.o.save.empty() && s_.comm.rank() == 0)
    INFIR2_RETURN_IF_ERROR(prepareSaveDir(s_.o.save));
  INFIR2_RETURN_IF_ERROR(
      s_.layout.initialize(s_.device.state(), s_.rng, s_.dp->rank()));
  if (!s_.o.load.empty())
    INFIR2_RETURN_IF_ERROR(checkpoints_.load(s_.o.load));
  INFIR2_RETURN_IF_ERROR(s_.check(s_.device.upload(0, s_.m.stateBytes)));
  // --dump-step with --fp8-stats-every: the weights' quantization and the
  // dumped step's, for the oracles.
  if (!s_.o.dumpStep.empty() && s_.fp8Stats)
    s_.fp8Stats->start(1);
  // The training and evaluation steps read the FP8 weights from the cache,
  // which the optimizer step keeps current from here on.
  if (s_.model.quantizeWeights)
    INFIR2_RETURN_IF_ERROR(s_.call(s_.model.quantizeWeights,
                                   "quantizing the FP8 weights", s_.step));
  else if (!s_.layout.runsOf(SlotKind::Fp8Cache).empty())
    return fail("the compiled model has an FP8 weight cache but no "
                "infir2_quantize_weights to fill it (a model object and "
                "manifest that do not belong together?): recompile it");
  if (!s_.o.exportFp8.empty())
    return s_.comm.rank() == 0 ? Fp8Export(s_).write(s_.o.exportFp8)
                               : Status::ok();
  if (s_.o.generate)
    return Generator(s_).run();
  if (s_.o.evalOnly) {
    if (!held_)
      return fail("--eval-only needs --eval-data");
    return evaluateOnly();
  }

  if (!s_.o.dumpStep.empty()) {
    if (s_.comm.size() > 1)
      return fail("--dump-step runs one process, not %d ranks", s_.comm.size());
    INFIR2_RETURN_IF_ERROR(zeroGradients());
    if (!train_)
      return fail("--dump-step needs --data");
    INFIR2_RETURN_IF_ERROR(
        fillBatch(*train_, s_.dataPosition, /*shard=*/false));
    INFIR2_RETURN_IF_ERROR(s_.call(s_.model.trainStep, "training step", 1));
    if (s_.fp8Stats) {
      s_.fp8Stats->stop();
      if (!std::ofstream(s_.o.fp8Stats, std::ios::trunc))
        return fail("--fp8-stats: cannot write %s", s_.o.fp8Stats.c_str());
      INFIR2_RETURN_IF_ERROR(s_.fp8Stats->write(s_.o.fp8Stats, false));
    }
    return trace_.dumpStep();
  }
  if (!s_.o.traceOptimizer.empty())
    INFIR2_RETURN_IF_ERROR(trace_.openOptimizerTrace());
  INFIR2_RETURN_IF_ERROR(trainLoop());
  if (s_.recorder && s_.comm.rank() == 0)
    return s_.recorder->write(s_.o.recordCalls);
  return Status::ok();
}

Status Trainer::trainLoop() {
  JsonlLog jsonl;
  bool lead = s_.comm.rank() == 0;
  if (!s_.o.logJsonl.empty() && lead)
    INFIR2_RETURN_IF_ERROR(jsonl.open(s_.o.logJsonl, /*append=*/s_.step > 0));
  // The ranks of a tensor-parallel group read the same tokens.
  int64_t tokensPerStep =
      s_.m.batch * s_.m.seq * s_.o.gradAccum * s_.dp->size();
  if (lead)
    std::printf("training: %lld steps of %lld tokens (micro-batch %lld x %lld, "
                "%lld accumulated, %d rank%s), %.1f MiB state, %.1f MiB "
                "scratch, on %s\n",
                (long long)s_.o.steps, (long long)tokensPerStep,
                (long long)s_.m.batch, (long long)s_.m.seq,
                (long long)s_.o.gradAccum, s_.comm.size(),
                s_.comm.size() > 1 ? "s" : "", s_.m.stateBytes / 1048576.0,
                s_.m.scratchBytes / 1048576.0, s_.device.name().c_str());
  if (lead && s_.tp)
    std::printf("layout: tensor-parallel %d x data-parallel %d\n",
                s_.tp->size(), s_.dp->size());
  if (lead)
    std::printf("data: %s\n", train_->describe().c_str());
  auto start = std::chrono::steady_clock::now();
  auto lastLog = start;
  int64_t tokensSinceLog = 0, skippedInARow = 0, startStep = s_.step;
  double lossSinceLog = 0.0;
  int64_t stepsSinceLog = 0;
  int64_t lastSaved = -1;
  // The checkpoint due at this step (every --save-every, and the last),
  // whether the step updated the weights or was skipped.
  auto saveIfDue = [&]() -> Status {
    if (s_.o.save.empty() ||
        !((s_.o.saveEvery && s_.step % s_.o.saveEvery == 0) ||
          s_.step == s_.o.steps))
      return Status::ok();
    INFIR2_RETURN_IF_ERROR(checkpoints_.save(s_.step));
    s_.comm.barrier(/*unbounded=*/true); // rank 0 wrote the checkpoint alone
    lastSaved = s_.step;
    return Status::ok();
  };
  catchStopSignals();
  // --fp8-stats-every: a fresh run starts the file, a resumed one appends;
  // every rank learns whether rank 0 can write it before any step.
  bool statsNoticed = false;
  if (s_.fp8Stats) {
    bool ok =
        !lead || std::ofstream(s_.o.fp8Stats,
                               s_.step > 0 ? std::ios::app : std::ios::trunc);
    if (s_.comm.max(ok ? 0.0 : 1.0) != 0.0)
      return fail("--fp8-stats: cannot write %s", s_.o.fp8Stats.c_str());
  }
  while (s_.step < s_.o.steps) {
    Expected<bool> stop = stopRequested(lastSaved);
    if (!stop)
      return stop.failure();
    if (*stop)
      return Status::ok();
    ++s_.step;
    if (s_.recorder) { // everything up to the next step's start is this one's
      s_.recorder->endStep();
      s_.recorder->beginStep();
    }
    if (hook_)
      hook_->beforeStep(s_.comm.rank(), s_.step);
    // --fp8-stats-every: rank 0's quantizations of this step, written once
    // its optimizer step (the weight cache's refresh) is done or skipped.
    bool statsStep = s_.fp8Stats && s_.step % s_.o.fp8StatsEvery == 0;
    if (statsStep && lead)
      s_.fp8Stats->start(s_.step);
    auto writeStats = [&](bool skipped) -> Status {
      if (!statsStep)
        return Status::ok();
      Status written = Status::ok();
      if (lead) {
        s_.fp8Stats->stop();
        if (!statsNoticed && s_.fp8Stats->pending() == 0)
          std::fprintf(stderr,
                       "trainer: --fp8-stats-every: step %lld "
                       "quantized nothing (a trainer compiled without "
                       "the FP8 recipe?)\n",
                       (long long)s_.step);
        statsNoticed = true;
        written = s_.fp8Stats->write(s_.o.fp8Stats, skipped);
      }
      // The ranks stop together when rank 0 cannot write (a full disk).
      if (s_.comm.max(written ? 0.0 : 1.0) != 0.0 && written)
        return fail("step %lld: rank 0 could not write --fp8-stats %s",
                    (long long)s_.step, s_.o.fp8Stats.c_str());
      return written;
    };
    INFIR2_RETURN_IF_ERROR(zeroGradients());
    // A step the runtime refused as non-finite (an infinite or NaN amax in
    // the FP8 recipe) is skipped like a non-finite loss.
    std::string refused;
    bool computedAll = true;
    std::vector<int64_t> losses; // where each micro-batch's loss is read back
    for (int64_t k = 0; k < s_.o.gradAccum; ++k) {
      INFIR2_RETURN_IF_ERROR(
          fillBatch(*train_, s_.dataPosition, /*shard=*/true));
      Expected<bool> computed = trainStep(s_.step, refused);
      if (!computed)
        return computed.failure();
      if (!*computed) {
        computedAll = false;
        continue; // the batch is consumed, as for a non-finite loss
      }
      Expected<const ManifestSlot *> slot =
          s_.layout.get(SlotKind::Output, "loss");
      if (!slot)
        return slot.failure();
      Expected<int64_t> at = s_.device.keep((*slot)->offset, (*slot)->bytes);
      INFIR2_RETURN_IF_ERROR(s_.check(at ? Status::ok() : at.failure()));
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
    loss = s_.comm.sum(loss) / double(s_.o.gradAccum * s_.comm.size());
    bool finite = back->gradientsFinite;
    bool bad = s_.comm.max(std::isfinite(loss) && finite ? 0.0 : 1.0) != 0.0;
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
                     (long long)s_.step, reason.c_str());
        StepMetrics skippedStep;
        skippedStep.step = s_.step;
        skippedStep.skipped = reason;
        INFIR2_RETURN_IF_ERROR(jsonl.write(skippedStep));
      }
      if (++skippedInARow >= s_.o.maxSkipped)
        return fail("%lld steps in a row had non-finite losses or gradients "
                    "(last: step %lld); stopping",
                    (long long)skippedInARow, (long long)s_.step);
      // A skipped step is still a step: the checkpoint due at it (the last
      // step's, say) is written, holding the untouched weights.
      INFIR2_RETURN_IF_ERROR(writeStats(/*skipped=*/true));
      INFIR2_RETURN_IF_ERROR(saveIfDue());
      continue;
    }
    skippedInARow = 0;
    double lr = schedule_.at(s_.step);
    INFIR2_RETURN_IF_ERROR(s_.setScalar("learning_rate", float(lr)));
    ++s_.updates;
    // AdamW's bias correction; SGD has none.
    if (s_.layout.find(SlotKind::Input, "step"))
      INFIR2_RETURN_IF_ERROR(s_.setScalar("step", float(s_.updates)));
    // The mean over the data-parallel ranks' micro-batches (a
    // tensor-parallel group's ranks hold shards of one gradient).
    double gradScale = 1.0 / double(s_.o.gradAccum * s_.dp->size());
    INFIR2_RETURN_IF_ERROR(s_.setScalar("grad_scale", float(gradScale)));
    if (!s_.o.traceOptimizer.empty())
      INFIR2_RETURN_IF_ERROR(trace_.traceGradients(lr, gradScale));
    // Not waited for: reading the gradient norm waits for it.
    INFIR2_RETURN_IF_ERROR(s_.call(s_.model.optimizerStep, "optimizer step",
                                   s_.step,
                                   /*wait=*/false));
    if (!s_.o.traceOptimizer.empty())
      INFIR2_RETURN_IF_ERROR(trace_.writeOptimizerTrace(s_.step));
    Expected<float> gradNorm = s_.scalar(SlotKind::Output, "grad_norm");
    if (!gradNorm)
      return gradNorm.failure();
    INFIR2_RETURN_IF_ERROR(writeStats(/*skipped=*/false));
    lossSinceLog += loss;
    ++stepsSinceLog;

    bool evalNow =
        held_ && ((s_.o.evalEvery && s_.step % s_.o.evalEvery == 0) ||
                  s_.step == s_.o.steps);
    bool logNow =
        s_.step % s_.o.logEvery == 0 || s_.step == s_.o.steps || evalNow;
    StepMetrics metrics;
    if (evalNow) {
      Expected<Evaluation> evaluation = evaluate(s_.o.evalBatches);
      if (!evaluation)
        return evaluation.failure();
      metrics.evalLoss = evaluation->loss;
    }
    if (logNow && lead) {
      auto now = std::chrono::steady_clock::now();
      double dt = std::chrono::duration<double>(now - lastLog).count();
      double elapsed = std::chrono::duration<double>(now - start).count();
      metrics.step = s_.step;
      metrics.steps = s_.o.steps;
      metrics.loss = lossSinceLog / double(std::max<int64_t>(stepsSinceLog, 1));
      metrics.lr = lr;
      metrics.gradNorm = *gradNorm;
      metrics.tokensPerSecond = tokensSinceLog / std::max(dt, 1e-9);
      metrics.etaSeconds =
          elapsed / double(s_.step - startStep) * double(s_.o.steps - s_.step);
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
  if (s_.recorder)
    s_.recorder->endStep();
  if (lead)
    reportMemory();
  return Status::ok();
}

Expected<bool> Trainer::stopRequested(int64_t lastSaved) {
  // Every rank takes the same decision (mpirun passes a SIGTERM to all
  // ranks, but not at the same instant).
  int signal = int(s_.comm.max(double(stopSignal())));
  if (!signal)
    return false;
  stoppedBy_ = signal;
  std::string where = s_.o.save.empty() ? "nothing saved (no --save)"
                      : s_.step == 0    ? "nothing saved (no step finished)"
                                        : "checkpoint saved in " + s_.o.save;
  if (!s_.o.save.empty() && s_.step > 0 && lastSaved != s_.step) {
    INFIR2_RETURN_IF_ERROR(checkpoints_.save(s_.step));
    s_.comm.barrier(/*unbounded=*/true); // rank 0 wrote the checkpoint alone
  }
  if (s_.comm.rank() <= 0)
    std::fprintf(stderr, "trainer: stopped by %s after step %lld; %s\n",
                 stopSignalName(signal), (long long)s_.step, where.c_str());
  return true;
}
