//===- Fp8Stats.h - What each FP8 quantization of a step did -----*- C++
//-*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// --fp8-stats-every N: on every N-th training step, for each quantization the
// step's functions run (quantize, each tensor of a batched quantize_dual in
// both of its layouts, the fused norm and SwiGLU quantizers), the largest
// magnitude it read (amax), its smallest and largest scale, the largest
// scaled magnitude, the fraction of values the format could not hold (|x| /
// scale rounding beyond its largest finite value, clamped to it) and the
// fraction of non-zero values that became zero, written as JSON lines. A
// backend over the chosen one (like CallRecorder)
// computes them after each such call from the call's own operands: the
// high-precision input, the FP8 codes and the scales. It does nothing on the
// other steps. On a GPU the logged step copies those operands to the host
// (round trips on that step only).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_DEVICE_FP8STATS_H
#define INFIR2_RUNTIME_DRIVER_DEVICE_FP8STATS_H

#include "infir2/runtime/Backend.h"
#include "infir2/runtime/Expected.h"
#include "infir2/runtime/Manifest.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace infir2::rt {

/// One quantization's statistics.
struct QuantizationStats {
  std::vector<int64_t> shape; ///< of the quantized tensor (as its layout)
  double amax = 0.0, scaleMin = 0.0, scaleMax = 0.0;
  /// The largest |x| / its block's scale: how much of the format's range
  /// the quantization uses (448 in E4M3 at most with the recipe's scales).
  double maxScaled = 0.0;
  int64_t numel = 0, nonzero = 0, saturated = 0, flushed = 0;
};

/// The statistics of `x` (of `shape`, row-major, as FP32) quantized into
/// `codes` with one scale per block of `block` (a size per dimension;
/// `scales` row-major over the blocks, the last ones ragged), in E5M2 when
/// `e5m2`, else E4M3. With `transposed`, x is read as [T, K] (K its last
/// dimension) and the codes and scales are of its [K, T] transpose, `block`
/// two sizes over that: quantize_dual's second layout.
QuantizationStats quantizationStats(const float *x,
                                    const std::vector<int64_t> &shape,
                                    const uint8_t *codes, const float *scales,
                                    const std::vector<int64_t> &block,
                                    bool e5m2, bool transposed);

class Fp8StatsRecorder {
public:
  /// Records what `inner` quantizes while on; one recorder per process.
  /// `manifest` names the state's slots (a weight's quantization is named by
  /// the parameter it reads).
  Fp8StatsRecorder(const infir2rt_backend *inner, const Manifest &manifest);
  ~Fp8StatsRecorder();
  Fp8StatsRecorder(const Fp8StatsRecorder &) = delete;
  Fp8StatsRecorder &operator=(const Fp8StatsRecorder &) = delete;

  /// The backend to run on instead of `inner`.
  const infir2rt_backend *backend() const { return &table_; }

  /// Records from now (step `step`) until stop().
  void start(int64_t step);
  void stop() { on_ = false; }
  /// Which step function runs now: its quantizations are recorded under
  /// its name, numbered from 0 in each of its calls (`call`: the
  /// micro-batch of a train_step).
  void enter(const std::string &function);

  /// Appends the records since start() to `path` as JSON lines, marked
  /// `skipped` for a step the trainer skipped, and forgets them.
  Status write(const std::string &path, bool skipped);
  /// Quantizations recorded since start().
  size_t pending() const { return records_.size(); }

  // The recording table's functions reach the recorder here.
  static Fp8StatsRecorder *current;
  const infir2rt_backend *inner;
  /// After a successful call of entry `index`: its quantizations' records.
  int32_t record(int index, infir2rt_context *ctx, const int64_t *desc,
                 const char *where);
  bool on() const { return on_; }

private:
  struct Record {
    std::string function, where, name, layout, format;
    int64_t call = 0, index = 0;
    QuantizationStats stats;
  };
  /// One quantized tensor of a call: operand indices of its input, codes
  /// and scales, and its blocks.
  int32_t recordOne(infir2rt_context *ctx, const int64_t *desc,
                    const char *where, int64_t input, int64_t codes,
                    int64_t scales, std::vector<int64_t> block, bool e5m2,
                    bool transposed);
  /// The state slot holding region offset `offset`, by name ("" if none).
  std::string slotAt(int64_t region, int64_t offset) const;

  infir2rt_backend table_;
  const Manifest &manifest_;
  std::string function_;
  bool on_ = false;
  int64_t step_ = 0;
  std::vector<Record> records_;
  std::map<std::string, int64_t> calls_; ///< this step's, by function
  int64_t index_ = 0;                    ///< in the current call
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_DEVICE_FP8STATS_H
