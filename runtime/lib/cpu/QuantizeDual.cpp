//===- QuantizeDual.cpp - One tensor quantized in two layouts -------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// fp8.quantize_dual on the CPU: x viewed as [T, K] quantized as it is and as
// its [K, T] transpose, each in its own blocks. The transpose is never made
// in FP32 for the two layouts the recipes use:
// - square blocks on a matrix (the weights' 128x128): the transpose's
//   blocks hold the same values, so its codes and scales are these,
//   transposed;
// - 1 x bt groups along T (activations and gradients for the weight
//   gradient): amaxes over bt rows at a time, codes encoded row by row and
//   written transposed.
// Both give exactly the bytes of quantizing the transpose (the amax of a
// block does not depend on the order it is read in).
//
//===----------------------------------------------------------------------===//

#include "Blocks.h"
#include "Fp8Loops.h"
#include "Operand.h"
#include "Transpose.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace infir2::rt::cpu {

namespace {

/// The [K, T] layout in 1 x bt groups, from x [T, K], whose values are
/// finite (the direct layout, quantized first, has refused any other).
void quantizeColumnGroups(const float *x, int64_t T, int64_t K, int64_t bt,
                          FP8Format format, ScaleRule rule,
                          const Operand &dataT, const Operand &scaleT) {
  int64_t nT = T / bt;
  // Work areas for every thread, taken before the parallel region (a
  // failed allocation must not throw inside it).
  int threads = T * K > 65536 ? omp_get_max_threads() : 1;
  Scratch<float> amax(K * nT), factor(K * nT), m(K * threads);
  Scratch<uint8_t> tiles(bt * K * threads);
#pragma omp parallel num_threads(threads)
  {
    int me = omp_get_thread_num();
    float *mx = m.data() + K * me;
    uint8_t *codes = tiles.data() + bt * K * me;
#pragma omp for
    for (int64_t tb = 0; tb < nT; ++tb) {
      std::fill(mx, mx + K, 0.0f);
      for (int64_t t = tb * bt; t < (tb + 1) * bt; ++t) {
        const float *row = x + t * K;
#pragma omp simd
        for (int64_t k = 0; k < K; ++k) {
          float a = std::fabs(row[k]);
          mx[k] = a > mx[k] ? a : mx[k];
        }
      }
      for (int64_t k = 0; k < K; ++k)
        amax.data()[k * nT + tb] = mx[k];
    }
#pragma omp single
    // x / s, or x · (1 / s) under power-of-two scales (the same rounding).
    for (int64_t b = 0; b < K * nT; ++b) {
      float s = fp8Scale(amax.data()[b], format, rule);
      scaleT.set(b, s);
      factor.data()[b] = rule != ScaleRule::FP32 ? 1.0f / s : s;
    }
#pragma omp for
    for (int64_t tb = 0; tb < nT; ++tb) {
      for (int64_t k = 0; k < K; ++k) // this block's factors, by column
        mx[k] = factor.data()[k * nT + tb];
      for (int64_t t = 0; t < bt; ++t)
        encodeSpanEach(format, x + (tb * bt + t) * K, mx,
                       rule != ScaleRule::FP32, codes + t * K, K);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t t = 0; t < bt; ++t)
          dataT.ptr[k * T + tb * bt + t] = codes[t * K + k];
    }
  }
}

} // namespace

namespace {

/// One group of quantize_dual: the five operands from `first`.
int32_t quantizeDualGroup(const Call &c, int64_t first) {
  Operand x = c.operand(first), data = c.operand(first + 1),
          scale = c.operand(first + 2), dataT = c.operand(first + 3),
          scaleT = c.operand(first + 4);
  // Every group has the first's rank (the dispatcher checks it), so one
  // block shape serves them all.
  auto a = c.attrs<attrs::quantize_dual>();
  FP8Format format = a.format ? FP8Format::E5M2 : FP8Format::E4M3;
  if (const char *why =
          scaleRuleError(a.scale_rule, scale.dtype == INFIR2RT_E8M0 ||
                                           scaleT.dtype == INFIR2RT_E8M0))
    return c.fail("%s", why);
  ScaleRule rule = ScaleRule(a.scale_rule);
  std::vector<int64_t> block = a.block.values();
  int64_t blockT[2] = {a.block_t[0], a.block_t[1]};
  Buffer bx;
  const float *X = x.floats(bx);
  if (int32_t err = quantizeInto(c, X, data, scale, format, rule, block.data()))
    return err;
  int64_t cols = x.last(), rows = x.rows();
  if (x.rank == 2 && block[0] == block[1] && blockT[0] == block[0] &&
      blockT[1] == block[0] && rows % block[0] == 0 && cols % block[0] == 0) {
    transposeLastTwo(data.ptr, dataT.ptr, 1, rows, cols);
    int64_t br = rows / block[0], bc = cols / block[0];
    for (int64_t i = 0; i < br; ++i)
      for (int64_t j = 0; j < bc; ++j)
        scaleT.set(j * br + i, scale.get(i * bc + j));
    return 0;
  }
  if (blockT[0] == 1 && blockT[1] > 0 && rows % blockT[1] == 0) {
    quantizeColumnGroups(X, rows, cols, blockT[1], format, rule, dataT, scaleT);
    return 0;
  }
  // Otherwise the FP32 transpose, quantized.
  Buffer t(x.numel);
  transposeLastTwo(X, t.data(), 1, rows, cols);
  return quantizeInto(c, t.data(), dataT, scaleT, format, rule, blockT);
}

} // namespace

int32_t quantize_dual(const Call &c) {
  if (c.numOperands() % 5 != 0)
    return c.fail("quantize_dual takes groups of five operands, got %lld",
                  (long long)c.numOperands());
  // The groups are independent (the compiler batches only those): one after
  // the other, each parallel inside.
  int64_t groups = c.numOperands() / 5;
  for (int64_t g = 0; g < groups; ++g)
    if (int32_t err = quantizeDualGroup(c, 5 * g)) {
      if (groups > 1) { // say which tensor of the batch
        std::string shape, message = c.ctx->error_message;
        Operand x = c.operand(5 * g);
        for (int64_t i = 0; i < x.rank; ++i)
          shape += (i ? "x" : "") + std::to_string(x.shape[i]);
        c.fail("tensor %lld of %lld (%s): %s", (long long)g + 1,
               (long long)groups, shape.c_str(), message.c_str());
      }
      return err;
    }
  return 0;
}

} // namespace infir2::rt::cpu
