//===- Optimizer.h - Optimizer math shared by the backends ------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The host-side scalars of an optimizer step, computed the same way by the
// CPU and CUDA backends.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_OPTIMIZER_H
#define INFIR2_RUNTIME_OPTIMIZER_H

#include <algorithm>

namespace infir2::rt {

/// grad_scale times the global-norm clipping coefficient (PyTorch's
/// clip_grad_norm_); no clipping when maxGradNorm <= 0.
inline float clippedGradScale(float gradScale, float norm, double maxGradNorm) {
  if (maxGradNorm <= 0.0)
    return gradScale;
  return gradScale * float(std::min(1.0, maxGradNorm / (double(norm) + 1e-6)));
}

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_OPTIMIZER_H
