//===- Session.h - What the parts of a run share ----------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// One run of a compiled trainer: the model's manifest and entry points, the
// run's options, the data-parallel group, the device and the state on it,
// the context the steps run in, and how far the run has come. The training
// loop (Trainer.h) and the parts it calls on (Checkpoints.h, StepTrace.h,
// Generator.h, Fp8Export.h) each work over one session.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_LOOP_SESSION_H
#define INFIR2_RUNTIME_DRIVER_LOOP_SESSION_H

#include "config/Cli.h"
#include "device/Device.h"
#include "device/Fp8Stats.h"
#include "device/Recording.h"
#include "dist/Communicator.h"
#include "io/StateLayout.h"

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Expected.h"

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

struct Session {
  Session(Manifest manifest, RunConfig config, ModelEntryPoints model,
          Communicator &comm);
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  StateLayout layout;
  const Manifest &m; ///< layout's
  RunConfig o;
  ModelEntryPoints model;
  Communicator &comm;
  /// A tensor-parallel model's two groups (consecutive ranks share a
  /// tensor-parallel group; a data-parallel group holds one rank of each):
  /// `dp` is `comm` itself without tensor parallelism, and `tp` null.
  Communicator *dp = &comm;
  std::unique_ptr<Communicator> tp, dpGroup;
  Device device;
  infir2rt_context ctx{};
  /// With --record-calls: counts what the steps ask of the backend.
  std::unique_ptr<CallRecorder> recorder;
  std::unique_ptr<Fp8StatsRecorder> fp8Stats; ///< --fp8-stats-every
  /// The checkpoint or model folder --load resolved to (empty for none or
  /// a single file).
  std::string loadedDir;

  // How far the run has come (saved with each checkpoint).
  /// Optimizer steps taken, and applied (a non-finite one is skipped).
  int64_t step = 0, updates = 0;
  /// Samples of the training data the group has consumed.
  int64_t dataPosition = 0;
  /// Initialization (and nothing else draws from it after).
  std::mt19937_64 rng;

  /// Chooses the device, allocates the regions, installs the recorder
  /// (--record-calls) and joins the collectives. `notice` gets a line for
  /// the user (e.g. "training on the CPU").
  Status open(std::string &notice);

  /// A slot of the host copy of the state.
  uint8_t *bytesAt(const ManifestSlot &s) { return device.state() + s.offset; }
  template <typename T> T *at(const ManifestSlot &s) {
    return reinterpret_cast<T *>(bytesAt(s));
  }
  /// The host copy of slot `s`, as FP32.
  std::vector<float> hostValues(const ManifestSlot &s);

  /// A device call's failure, named by the device ("GPU 0 ...: why").
  Status check(Status s);
  /// Moves a slot between the host copy and the device.
  Status upload(const ManifestSlot &s);
  Status download(const ManifestSlot &s);
  /// A scalar slot's value (downloaded), and an input scalar set (uploaded).
  Expected<float> scalar(SlotKind kind, const char *name);
  Status setScalar(const char *name, float v);

  /// "train_step", "optimizer_step", ...: the step function `fn` is.
  const char *functionName(int32_t (*fn)(infir2rt_context *)) const;
  /// Tells the recorder which step function runs (nothing without one).
  void entering(const char *function) {
    if (recorder)
      recorder->enter(function);
    if (fp8Stats)
      fp8Stats->enter(function);
  }
  /// Runs a step function; with `wait`, waits for its work (where its
  /// asynchronous failures surface, named by `what`).
  Status call(int32_t (*fn)(infir2rt_context *), const char *what,
              int64_t atStep, bool wait = true);

  /// Where saved folders take their tokenizer files from: --tokenizer, or
  /// the loaded folder's own; empty for none.
  std::string tokenizerSource() const;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_LOOP_SESSION_H
