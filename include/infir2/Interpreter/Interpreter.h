//===- Interpreter.h - FP64 reference interpreter ---------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Executes infir2 and fp8 ops straight from the IR in plain FP64 loops: slow
// and obviously correct, it is the oracle the compiled trainer, the gradient
// rules and the FP8 passes are tested against.
//
// Numerics: every infir2 op computes in FP64, whatever the declared element
// type (bf16 tensors are not rounded): the interpreter gives the exact
// function, not one precision's approximation of it. The fp8 ops follow the
// numerics contract bit for bit instead, because their rounding *is* their
// meaning: scales and `x / scale` are computed in FP32 as the runtimes compute
// them, and the quotient is converted to FP8 with round-to-nearest-even,
// saturating to the format's largest finite value (CUDA's __NV_SATFINITE).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_INTERPRETER_INTERPRETER_H
#define INFIR2_INTERPRETER_INTERPRETER_H

#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SmallVector.h"

#include <functional>
#include <vector>

namespace infir2::interp {

/// A dense row-major tensor of FP64 values. Integer and i1 tensors hold their
/// values exactly as doubles.
struct Tensor {
  llvm::SmallVector<int64_t> shape;
  std::vector<double> data;

  Tensor() = default;
  explicit Tensor(llvm::ArrayRef<int64_t> shape, double fill = 0.0);
  int64_t getNumElements() const { return data.size(); }
};

/// The amax floor of the scale rule: a block whose largest magnitude is
/// below this is scaled as if its amax were this value, so its scale never
/// underflows to zero (it then quantizes to zeros).
constexpr float kAmaxFloor = 1e-12f;

/// What one FP8 quantization did: its op, its layout (the transposed copy
/// of an fp8.quantize_dual, or the input as it is), the quantized layout's
/// shape, the largest magnitude it read, its scales' range, the largest
/// scaled magnitude, and how many of its values were non-zero, rounded
/// beyond the format's largest finite value once scaled (clamped:
/// saturated), and non-zero but zero in FP8 (flushed). The
/// trainer's --fp8-stats-every writes the same (docs/Fp8Stats.md).
struct QuantizationRecord {
  mlir::Operation *op = nullptr;
  bool transposed = false;
  llvm::SmallVector<int64_t> shape;
  double amax = 0.0, scaleMin = 0.0, scaleMax = 0.0;
  double maxScaled = 0.0; ///< the largest |value / its block's scale|
  int64_t numel = 0, nonzero = 0, saturated = 0, flushed = 0;
};
using QuantizationObserver = std::function<void(const QuantizationRecord &)>;
/// Sees each op's results as it runs (infir2-bisect: every GEMM's output).
using ResultObserver =
    std::function<void(mlir::Operation *, llvm::ArrayRef<Tensor>)>;

/// Runs `fn` on `inputs` (one per argument, shapes as in the signature) and
/// returns its results. Errors (a shape mismatch, a token id out of range, a
/// non-finite amax, an op without a rule) are reported as diagnostics at the
/// offending op's location. `observer`, when given, sees each quantization
/// as it runs, in order; `results` each op's results.
llvm::FailureOr<llvm::SmallVector<Tensor>>
run(mlir::FunctionOpInterface fn, llvm::ArrayRef<Tensor> inputs,
    const QuantizationObserver &observer = nullptr,
    const ResultObserver &results = nullptr);

/// Runs `fn` once a rank of a tensor-parallel group, `inputs[r]` being rank
/// r's inputs, all ranks in step: an `infir2.tp_reduce` over the group gives
/// every rank the sum of the ranks' operands (in rank order). Returns each
/// rank's results. `run` is this with one rank; the observers see rank 0's
/// quantizations and results.
llvm::FailureOr<llvm::SmallVector<llvm::SmallVector<Tensor>>>
runRanks(mlir::FunctionOpInterface fn,
         llvm::ArrayRef<llvm::SmallVector<Tensor>> inputs,
         const QuantizationObserver &observer = nullptr,
         const ResultObserver &results = nullptr);

/// Rounds `value` to FP8 (f8E4M3FN when `e5m2` is false, f8E5M2 otherwise)
/// with round-to-nearest-even, saturating finite values to the format's
/// largest magnitude; NaN stays NaN. Uses LLVM's APFloat, independently of
/// the runtime's conversion code.
double roundToFP8(float value, bool e5m2);

/// The scale rule of the numerics contract: amax 0 gives 1; otherwise
/// max(amax, kAmaxFloor) / fmtMax in FP32, rounded up to a power of two when
/// `pow2` is set. `amax` must be finite.
float computeScale(float amax, float fmtMax, bool pow2);

/// The `floor` rule (the OCP MX specification's conversion): amax 0 gives
/// 1; otherwise 2^(floor(log2 max(amax, kAmaxFloor)) - emax), `emax` the
/// format's largest exponent (8 for E4M3, 15 for E5M2). `amax` must be
/// finite.
float computeFloorScale(float amax, int emax);

} // namespace infir2::interp

#endif // INFIR2_INTERPRETER_INTERPRETER_H
