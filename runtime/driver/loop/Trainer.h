//===- Trainer.h - The training loop ----------------------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The loop of a compiled trainer, over its session (Session.h: the device,
// the state, the context, the group): feeds batches, runs the model's train
// step K times per optimizer step (gradient accumulation) and its optimizer
// step once, skips non-finite steps collectively, logs and evaluates; it
// calls on Checkpoints, StepTrace, Generator and Fp8Export for the rest.
// The model's entry points come in as function pointers, so a test can
// drive the loop with a model of its own.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_LOOP_TRAINER_H
#define INFIR2_RUNTIME_DRIVER_LOOP_TRAINER_H

#include "DataSource.h"
#include "config/Schedule.h"
#include "loop/Checkpoints.h"
#include "loop/Session.h"
#include "loop/StepTrace.h"

#include "infir2/runtime/Expected.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace infir2::rt {

/// A seam for tests: called at the start of every optimizer step. Production
/// trainers install none (see testing/FaultInjection.h).
class StepHook {
public:
  virtual ~StepHook();
  virtual void beforeStep(int rank, int64_t step) = 0;
};

class Trainer {
public:
  Trainer(Manifest manifest, RunConfig config, ModelEntryPoints model,
          Communicator &comm, StepHook *hook = nullptr);

  /// Chooses the device, allocates the regions and joins the collectives.
  /// `notice` gets a line for the user (e.g. "training on the CPU").
  Status open(std::string &notice);
  /// Trains (or, with --dump-step, runs one step and dumps it).
  Status run();

  /// After run(): the optimizer steps taken and applied.
  int64_t step() const { return s_.step; }
  /// After run(): the signal that stopped it early (SIGINT, SIGTERM), or 0.
  int stoppedBy() const { return stoppedBy_; }
  int64_t updates() const { return s_.updates; }

private:
  Status zeroGradients();
  Status fillBatch(TokenSource &source, int64_t &position, bool shard);
  /// Refuses packed data for a model that cannot keep its documents apart.
  Status checkPackingSupported();
  /// The held-out loss: the mean over the masked-in targets of
  /// --eval-batches batches (0: one pass over the whole held-out set).
  struct Evaluation {
    double loss = 0.0;
    int64_t tokens = 0, batches = 0;
  };
  Expected<Evaluation> evaluate(int64_t batches);
  /// --eval-only: evaluates once, prints and logs loss, perplexity, tokens.
  Status evaluateOnly();
  /// What a training step's one read-back brings: the sum of the losses
  /// kept at `losses` (Device::keep), and whether every gradient
  /// accumulator is finite.
  struct ReadBack {
    double loss = 0.0;
    bool gradientsFinite = true;
    /// A call the GPU refused at the read-back ("where: message"), or empty.
    std::string refused;
  };
  Expected<ReadBack> readBack(const std::vector<int64_t> &losses);
  Status trainLoop();
  /// Planned against measured memory, on standard error at the end of a run
  /// (TrainerMemory.cpp).
  void reportMemory() const;
  /// This process's resident bytes now (/proc/self/statm), 0 if unknown.
  static double residentBytes();
  /// Runs the training step on the current batch: true when it computed,
  /// false when the runtime refused a non-finite value (why in `refused`),
  /// an error otherwise.
  Expected<bool> trainStep(int64_t atStep, std::string &refused);
  /// When any rank was asked to stop: saves the last step (with --save) and
  /// says so; true when the loop must end.
  Expected<bool> stopRequested(int64_t lastSaved);

  Session s_;
  Checkpoints checkpoints_{s_};
  StepTrace trace_{s_};
  Schedule schedule_;
  StepHook *hook_;
  std::unique_ptr<TokenSource> train_, held_;
  /// Resident bytes before the regions were allocated: the process itself.
  double residentAtOpen_ = 0.0;
  int stoppedBy_ = 0;
  /// The byte ranges of the gradient accumulators (layout.runsOf), zeroed
  /// and checked every step.
  std::vector<std::pair<int64_t, int64_t>> gradRuns_;
  /// Inputs a model may not take: loss weights without a mask, positions
  /// per token for a model with shared ones, segment ids without segments.
  std::vector<float> weights_;
  std::vector<int32_t> positions_, segments_;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_LOOP_TRAINER_H
