//===- StepTime.h - A step's predicted time on a target ---------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// A roofline model of a training step: each op's time is its FLOPs over the
// target's rate for its kind (a GEMM's rate from a small table of measured
// shapes), or its bytes over the target's memory bandwidth, whichever is
// longer, plus a fixed cost per call. Targets: `h100` and `h200` (peaks and
// GEMM rates measured on the lent machines), `cpu` from a calibration file
// that `infir2-gemm-peak --json` writes on the machine that will train.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TRANSFORMS_STEPTIME_H
#define INFIR2_TRANSFORMS_STEPTIME_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace infir2 {

/// A GEMM whose rate was measured on a target, TFLOP/s by operand type.
struct MeasuredGemm {
  int64_t m, n, k;
  double bf16, fp8;
};

/// What the model knows of a machine.
struct StepTimeTarget {
  std::string name;
  /// Peak rates, FLOP/s: BF16 (and FP16) products, FP8 products, FP32.
  double bf16Flops = 0, fp8Flops = 0, f32Flops = 0;
  /// Memory bandwidth reached by streaming kernels, bytes/s.
  double bytesPerSecond = 0;
  /// The share of the BF16 peak attention reaches (a fused kernel's).
  double attentionEfficiency = 0.5;
  /// Rates that bind memory-light ops where bandwidth does not (the CPU),
  /// per second: exps (SwiGLU's sigmoid, softmax), the input elements of a
  /// quantize_dual, the logits of a cross-entropy; 0: not a bound.
  double expsPerSecond = 0, quantizedPerSecond = 0, logitsPerSecond = 0;
  /// Fixed cost of one runtime call (a launch, a thread team's start), s.
  double callSeconds = 0;
  /// GEMM rates by shape; the nearest shape (in log M, N, K) scales the
  /// peak. Empty: the peak itself.
  std::vector<MeasuredGemm> gemms;
};

/// The target `name` names: "h100", "h200", or "cpu" with the JSON
/// `calibration` file infir2-gemm-peak --json writes. A clear error
/// otherwise.
mlir::FailureOr<StepTimeTarget>
lookUpStepTimeTarget(llvm::StringRef name, llvm::StringRef calibration,
                     std::string &error);

/// The predicted seconds of a GEMM of M x N x K on `target`, with BF16 or
/// FP8 operands (the table's rate for the nearest shape, one call).
double gemmSeconds(const StepTimeTarget &target, int64_t m, int64_t n,
                   int64_t k, bool fp8);

/// The predicted seconds to quantize `elements` BF16 values into both FP8
/// layouts (reading 2 bytes and writing 2 codes each, one call).
double quantizeSeconds(const StepTimeTarget &target, double elements);

/// One op's predicted cost.
struct OpTime {
  std::string kind; ///< the row it is counted in ("GEMM fp8", "attention")
  double flops = 0, bytes = 0, exps = 0, quantized = 0, logits = 0, seconds = 0;
};

/// The predicted time of one op (not a fused region: its ops one by one).
OpTime predictOp(mlir::Operation *op, const StepTimeTarget &target);

/// The predicted cost of each op of `fn`'s body (fp8.fused bodies counted
/// op by op; views cost nothing).
std::vector<OpTime> predictOps(mlir::func::FuncOp fn,
                               const StepTimeTarget &target);

/// Prints, for @train_step and @optimizer_step, one row per kind of op (calls,
/// GFLOP, GB moved, predicted ms, share) and their totals, then a step of
/// one micro-batch and its tokens/s.
void printStepTimeReport(mlir::ModuleOp module, const StepTimeTarget &target,
                         llvm::raw_ostream &os);

} // namespace infir2

#endif // INFIR2_TRANSFORMS_STEPTIME_H
