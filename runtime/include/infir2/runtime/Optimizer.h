//===- Optimizer.h - Optimizer math shared by the backends ------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The scalars of an optimizer step, computed the same way by the CPU
// backend (on the host) and the CUDA backend (on the device: the learning
// rate, step, gradient scale and norm stay in device memory).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_OPTIMIZER_H
#define INFIR2_RUNTIME_OPTIMIZER_H

#include "infir2/runtime/HostDevice.h"

#include <cmath>
#include <cstdint>

namespace infir2::rt {

/// grad_scale times the global-norm clipping coefficient (PyTorch's
/// clip_grad_norm_); no clipping when maxGradNorm <= 0. One correctly
/// rounded division and one product: the same bits on both backends.
INFIR2_HD float clippedGradScale(float gradScale, float norm,
                                 double maxGradNorm) {
  if (maxGradNorm <= 0.0)
    return gradScale;
  double c = maxGradNorm / (double(norm) + 1e-6);
  return gradScale * float(c < 1.0 ? c : 1.0);
}

/// AdamW's bias correction 1 - beta^t. For a whole step t (every step a
/// trainer takes) the power is repeated squaring in double, products only,
/// each correctly rounded: the same bits on the CPU and the GPU, whose
/// `pow`s may differ in the last place. Other t go through pow.
INFIR2_HD float biasCorrection(double beta, float t) {
  if (t >= 1.0f && t <= 2147483647.0f && t == floorf(t)) {
    double power = 1.0, base = beta;
    for (uint32_t n = uint32_t(t); n != 0; n >>= 1) {
      if (n & 1u)
        power *= base;
      base *= base;
    }
    return float(1.0 - power);
  }
  return float(1.0 - pow(beta, double(t)));
}

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_OPTIMIZER_H
