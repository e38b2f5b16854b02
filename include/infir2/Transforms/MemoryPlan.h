//===- MemoryPlan.h - State layout and arena planning of a step -*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The analysis behind --infir2-plan-memory. After a recipe pipeline a module
// holds @train_step, @optimizer_step and (optionally) @forward on tensors.
// planModel() gives every tensor a place: arguments and results live in the
// persistent state region (one slot per parameter, master weight, moment,
// gradient accumulator, input and output); everything a step computes lives
// in one scratch arena planned by liveness, first fit with reuse. The pass
// records the result in the IR (#infir2rt.plan, #infir2rt.buffer), where
// --infir2-lower-to-runtime reads it.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TRANSFORMS_MEMORYPLAN_H
#define INFIR2_TRANSFORMS_MEMORYPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <array>
#include <string>
#include <vector>

namespace infir2 {

/// What the planned bytes hold, for the memory report.
enum class MemoryCategory {
  Weights,          ///< BF16 working copies of the parameters
  Masters,          ///< FP32 master weights
  Moments,          ///< optimizer moments
  Gradients,        ///< FP32 gradient accumulators
  WeightCache,      ///< FP8 weights and scales kept between steps
  Inputs,           ///< token ids, targets, masks, positions, scalars
  SavedActivations, ///< high-precision tensors the backward pass reads
  FP8,              ///< FP8 copies and their scales
  Workspace,        ///< everything else a step computes
  Recomputed,       ///< results of ops --infir2-recompute cloned
};
constexpr int kNumMemoryCategories = 10;
llvm::StringRef memoryCategoryName(MemoryCategory c);

/// Bytes of a statically shaped tensor as the runtime stores it.
int64_t storedBytes(mlir::RankedTensorType type);

/// Buffers in the state and the arenas start at multiples of this.
constexpr int64_t kPlanAlignment = 64;
/// `n` bytes rounded up to kPlanAlignment.
int64_t alignedBytes(int64_t n);

/// One tensor of the persistent state region.
struct StateSlot {
  std::string kind; ///< param, master, moment1, moment2, grad, input, output
  std::string name; ///< the HF tensor name, or the input/output's name
  mlir::RankedTensorType type;
  int64_t offset = 0, bytes = 0;
  mlir::Attribute init; ///< for params: their #infir2.param
};

/// Where one tensor lives.
struct Buffer {
  bool scratch = false; ///< the step's arena, else the state region
  int64_t offset = 0;
};

/// One function, scheduled and planned.
struct FunctionPlan {
  std::string symbol; ///< the exported C symbol
  mutable mlir::func::FuncOp fn; ///< op accessors are not const
  llvm::SmallVector<mlir::Operation *> schedule; ///< fused bodies inlined
  llvm::DenseMap<mlir::Value, Buffer> buffers;
  /// (returned value, state slot index): copied out after the schedule.
  llvm::SmallVector<std::pair<mlir::Value, int64_t>> copyOut;
  int64_t scratchBytes = 0;
  /// Live scratch bytes by category at the step's peak, and when the loss
  /// is computed (all activations saved for backward are live then).
  std::array<int64_t, kNumMemoryCategories> peakByCategory{},
      atBackwardStart{};
  /// Live scratch bytes by category as each op of the schedule runs (its
  /// results placed, nothing it reads freed yet); where the peak is, and
  /// where the loss (-1 if none).
  std::vector<std::array<int64_t, kNumMemoryCategories>> timeline;
  int64_t peakAt = 0, lossAt = -1;
  /// The scratch buffers live at the peak, largest first.
  struct LiveBuffer {
    mlir::Value value;
    int64_t bytes;
    MemoryCategory category;
  };
  std::vector<LiveBuffer> atPeak;
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

/// Whether `result` is `operand`, an accumulator, plus what `op` computes
/// (AccumulatingOpInterface): each element is read before it is written,
/// unless the accumulator is also one of the factors, read whole.
bool addsInPlace(mlir::Operation *op, mlir::Value operand, mlir::Value result);

/// Whether the lowering runs `op` and `next`, consecutive ops, as one
/// runtime call of two groups (CallBatching): two fp8.quantize_duals of one
/// format, scale rule, granularity and input rank, or two
/// infir2.reduce_sums both with or both without an accumulator. The
/// planner keeps such a run's operands live until its last op, so that no
/// group writes where another reads; --infir2-group-calls makes the runs.
bool runsAsOneCall(mlir::Operation *op, mlir::Operation *next);

/// A value that lies inside another's buffer: `base`'s bytes from `offset`.
struct View {
  mlir::Value base;
  int64_t offset = 0;
};

/// The ops of `block` in execution order, with fp8.fused bodies inlined;
/// `alias` maps each value that shares another's buffer to where it lies in
/// it: a fused result and a reshape (the same bytes), a slice (its rows of
/// the input), and each input of a concat it can hold (its rows of the
/// result; the planner places the result before its inputs are made).
void scheduleBlock(mlir::Block &block,
                   llvm::SmallVectorImpl<mlir::Operation *> &schedule,
                   llvm::DenseMap<mlir::Value, View> &alias);

/// Whether scheduleBlock placed every input of `concat` inside its result:
/// else the planner refuses it (the runtime has no concatenation to run).
bool concatIsPlaced(mlir::Operation *concat,
                    const llvm::DenseMap<mlir::Value, View> &alias);

/// Plans `module`, which must hold @train_step and @optimizer_step (and may
/// hold @forward) after a recipe pipeline. Errors are emitted on the op at
/// fault.
mlir::FailureOr<ModelPlan> planModel(mlir::ModuleOp module);

/// The state region's bytes by category (the slots' kinds).
std::array<int64_t, kNumMemoryCategories>
stateByCategory(const ModelPlan &plan);

/// Prints the planned memory by category (state, plus the scratch arena at
/// the training step's peak).
void printMemoryReport(const ModelPlan &plan, llvm::raw_ostream &os);

struct StepTimeTarget;
/// Writes the plan of `module` (planned by planModel) as one self-contained
/// HTML page: the training step's memory over its ops by category, the peak
/// and what is live at it, every GEMM's precision decision, what was
/// recomputed and why, and the step time predicted on `target`.
void printMemoryReportHtml(const ModelPlan &plan, mlir::ModuleOp module,
                           const StepTimeTarget &target, llvm::raw_ostream &os);

} // namespace infir2

#endif // INFIR2_TRANSFORMS_MEMORYPLAN_H
