//===- Lowering.h - Memory planning and lowering to the runtime -*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// After the recipe pipeline, a module holds @train_step, @optimizer_step and
// (optionally) @forward on tensors. planModel() gives every tensor a place:
// arguments and results live in the persistent state region (one slot per
// parameter, master weight, moment, gradient accumulator, input and
// output), everything a step computes lives in one scratch arena planned by
// liveness with reuse. buildRuntimeModule() writes the planned steps as
// infir2rt.call ops on those buffers (one per runtime entry point call), and
// lowerToLLVM() turns them into LLVM dialect functions that call the
// runtime's entry points with constant descriptors, plus the manifest the
// trainer reads.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_LOWERING_LOWERING_H
#define INFIR2_LOWERING_LOWERING_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <array>
#include <string>
#include <vector>

namespace infir2::lowering {

/// What the planned bytes hold, for --report-memory.
enum class Category {
  Weights,          ///< BF16 working copies of the parameters
  Masters,          ///< FP32 master weights
  Moments,          ///< optimizer moments
  Gradients,        ///< FP32 gradient accumulators
  Inputs,           ///< token ids, targets, masks, positions, scalars
  SavedActivations, ///< high-precision tensors the backward pass reads
  FP8,              ///< FP8 copies and their scales
  Workspace,        ///< everything else a step computes
};
constexpr int kNumCategories = 8;
llvm::StringRef categoryName(Category c);

/// One tensor of the persistent state region.
struct StateSlot {
  std::string kind; ///< param, master, moment1, moment2, grad, input, output
  std::string name; ///< the HF tensor name, or the input/output's name
  mlir::RankedTensorType type;
  int64_t offset = 0, bytes = 0;
  std::string init = "zeros"; ///< for params: normal, ones or zeros
  double std = 0.0;
};

/// Where one tensor lives.
struct Buffer {
  int region = 0; ///< 0: state, 1: scratch (ABI.h)
  int64_t offset = 0;
};

/// One function, scheduled and planned.
struct FunctionPlan {
  std::string symbol; ///< the exported C symbol
  mutable mlir::func::FuncOp fn;
  llvm::SmallVector<mlir::Operation *> schedule; ///< fused bodies inlined
  llvm::DenseMap<mlir::Value, Buffer> buffers;
  /// (returned value, state slot index): copied out after the schedule.
  llvm::SmallVector<std::pair<mlir::Value, int64_t>> copyOut;
  int64_t scratchBytes = 0;
  /// Live scratch bytes by category at the step's peak, and when the loss
  /// is computed (all activations saved for backward are live then).
  std::array<int64_t, kNumCategories> peakByCategory{}, atBackwardStart{};
};

struct ModelPlan {
  std::vector<StateSlot> state;
  int64_t stateBytes = 0;
  std::vector<FunctionPlan> functions;
  int64_t scratchBytes = 0; ///< the largest function's
  int64_t batch = 0, seqLen = 0, vocab = 0;
  /// The ranks the optimizer state is sharded over (ZeRO-1), or 0.
  int64_t zero1WorldSize = 0;
};

/// Plans `module`, which must hold @train_step and @optimizer_step (and may
/// hold @forward) after a recipe pipeline. Errors are emitted on the op at
/// fault.
mlir::FailureOr<ModelPlan> planModel(mlir::ModuleOp module);

/// Prints the planned memory by category (state, plus the scratch arena at
/// the training step's peak).
void printMemoryReport(const ModelPlan &plan, llvm::raw_ostream &os);

/// The manifest the trainer reads: one record per line.
std::string buildManifest(const ModelPlan &plan);

/// The planned steps as a module of infir2rt.call ops (one function per
/// step, the manifest as a module attribute): the form --emit=plan prints.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildRuntimeModule(mlir::ModuleOp module, const ModelPlan &plan);

/// A new LLVM dialect module from an infir2rt module: each call becomes a
/// call of infir2rt_<entry> with a constant descriptor, failures return
/// early, and the manifest becomes the exported infir2_model_manifest.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
lowerToLLVM(mlir::ModuleOp runtimeModule);

/// Translates an LLVM dialect module to LLVM IR and writes it as an object
/// file (emitObject) or as textual LLVM IR (otherwise) to `path`.
mlir::LogicalResult emitLLVM(mlir::ModuleOp llvmModule, llvm::StringRef path,
                             bool emitObject);

} // namespace infir2::lowering

#endif // INFIR2_LOWERING_LOWERING_H
