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

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_OPTIMIZER_H
