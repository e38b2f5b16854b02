//===- Trainer.h - The training loop ----------------------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The loop of a compiled trainer: owns the device and the state, feeds
// batches, runs the model's train step K times per optimizer step (gradient
// accumulation) and its optimizer step once, skips non-finite steps
// collectively, and logs, evaluates and checkpoints. The model's entry
// points come in as function pointers, so a test can drive the loop with a
// model of its own.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_TRAINER_H
#define INFIR2_RUNTIME_DRIVER_TRAINER_H

#include "DataSource.h"
#include "config/Cli.h"
#include "config/Schedule.h"
#include "device/Device.h"
#include "device/Recording.h"
#include "dist/Communicator.h"
#include "infir2/runtime/Expected.h"
#include "io/CheckpointIO.h"
#include "io/StateLayout.h"
#include "io/TensorDump.h"

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Error.h"

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace infir2::rt {

/// What a compiled model object exports besides its manifest.
struct ModelEntryPoints {
  int32_t (*trainStep)(infir2rt_context *) = nullptr;
  int32_t (*optimizerStep)(infir2rt_context *) = nullptr;
  int32_t (*evalStep)(infir2rt_context *) = nullptr;
  /// One token of generation; null for a model compiled without it.
  int32_t (*decodeStep)(infir2rt_context *) = nullptr;
  /// Fills the FP8 weight cache from the parameters (the optimizer step
  /// refreshes it after each update); null for a model without one.
  int32_t (*quantizeWeights)(infir2rt_context *) = nullptr;
};

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
  int64_t step() const { return step_; }
  /// After run(): the signal that stopped it early (SIGINT, SIGTERM), or 0.
  int stoppedBy() const { return stoppedBy_; }
  int64_t updates() const { return updates_; }

private:
  /// A slot of the host copy of the state.
  uint8_t *bytesAt(const ManifestSlot &s) { return device_.state() + s.offset; }
  template <typename T> T *at(const ManifestSlot &s) {
    return reinterpret_cast<T *>(bytesAt(s));
  }
  /// A device call's failure, named by the device ("GPU 0 ...: why").
  Status check(Status s);
  Status upload(const ManifestSlot &s);
  Status download(const ManifestSlot &s);
  Status zeroGradients();
  Expected<float> scalar(SlotKind kind, const char *name);
  Status setScalar(const char *name, float v);
  /// "train_step", "optimizer_step", ...: the step function `fn` is.
  const char *functionName(int32_t (*fn)(infir2rt_context *)) const;
  /// Runs a step function; with `wait`, waits for its work (where its
  /// asynchronous failures surface, named by `what`).
  Status call(int32_t (*fn)(infir2rt_context *), const char *what,
              int64_t atStep, bool wait = true);

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

  // Checkpoints and dumps (TrainerCheckpoint.cpp).
  /// The whole FP32 tensor of a master or moment slot (gathered from every
  /// rank under ZeRO-1; every rank must call it, in the same order).
  Expected<std::vector<float>> wholeState(const ManifestSlot &s);
  Status loadCheckpoint(const std::string &path);
  /// Loads the parameters from a model folder or a .safetensors file.
  Status loadWeights(const std::string &path);
  Status loadOptimizerState(const std::string &path);
  Status saveCheckpoint(int64_t atStep);
  /// Every parameter's working copy, to write as a model's weights.
  std::vector<TensorSource> weightSources();
  /// The working weights' type as config.json's torch_dtype names it.
  std::string torchDtype() const;
  /// config.json and generation_config.json (when the model carries its
  /// config) and the tokenizer files from `tokenizerFrom` (if any).
  Status writeModelFiles(const std::string &dir, FileDigests &digests,
                         const std::string &tokenizerFrom);
  /// Where saved folders take their tokenizer files from: --tokenizer, or
  /// the loaded folder's own; empty for none.
  std::string tokenizerSource() const;
  // Generation with the decode step (TrainerGenerate.cpp).
  Status generate();
  // The FP8 inference export (TrainerExport.cpp).
  Status exportFp8(const std::string &out);
  /// Runs the training step on the current batch: true when it computed,
  /// false when the runtime refused a non-finite value (why in `refused`),
  /// an error otherwise.
  Expected<bool> trainStep(int64_t atStep, std::string &refused);
  /// When any rank was asked to stop: saves the last step (with --save) and
  /// says so; true when the loop must end.
  Expected<bool> stopRequested(int64_t lastSaved);
  // Dumps for external checks (TrainerTrace.cpp).
  /// The host copy of slot `s`, as FP32.
  std::vector<float> hostValues(const ManifestSlot &s);
  Status dumpStep();
  Status openOptimizerTrace();
  Status traceGradients(double lr, double gradScale);
  Status writeOptimizerTrace(int64_t atStep);

  StateLayout layout_;
  const Manifest &m_;
  RunConfig o_;
  Schedule schedule_;
  ModelEntryPoints model_;
  Communicator &comm_;
  StepHook *hook_;
  std::mt19937_64 rng_;
  Device device_;
  /// With --record-calls: counts what the steps ask of the backend.
  std::unique_ptr<CallRecorder> recorder_;
  /// Tells the recorder which step function runs (nothing without one).
  void entering(const char *function) {
    if (recorder_)
      recorder_->enter(function);
  }
  infir2rt_context ctx_{};
  std::unique_ptr<TokenSource> train_, held_;
  /// The checkpoint or model folder --load resolved to (empty for none or
  /// a single file).
  std::string loadedDir_;
  int64_t dataPosition_ = 0, step_ = 0, updates_ = 0;
  /// Resident bytes before the regions were allocated: the process itself.
  double residentAtOpen_ = 0.0;
  int stoppedBy_ = 0;
  TensorDump trace_; ///< --trace-optimizer's step in the making
  /// Inputs a model may not take: loss weights without a mask, positions
  /// per token for a model with shared ones, segment ids without segments.
  /// The byte ranges of the gradient accumulators (layout_.runsOf), zeroed
  /// and checked every step.
  std::vector<std::pair<int64_t, int64_t>> gradRuns_;
  std::vector<float> weights_;
  std::vector<int32_t> positions_, segments_;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_TRAINER_H
