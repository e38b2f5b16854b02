//===- Elementwise.h - Per-element math shared by the backends --*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The per-element formulas of the activations, the norm and the optimizers,
// in FP32, written once: the CPU backend calls them in its loops, the CUDA
// backend in its kernels (`__host__ __device__` under nvcc, as FP8.h). What
// the two backends may still differ in is the libraries under them (glibc's
// and CUDA's expf) and the order of sums, which the GPU tests bound.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_ELEMENTWISE_H
#define INFIR2_RUNTIME_ELEMENTWISE_H

#include "infir2/runtime/HostDevice.h"

#include <cmath>
#include <cstdint>

namespace infir2::rt {

INFIR2_HD float sigmoidOf(float x) { return 1.0f / (1.0f + expf(-x)); }

INFIR2_HD float siluOf(float x) { return x * sigmoidOf(x); }

INFIR2_HD float swigluOf(float gate, float up) {
  return gate * sigmoidOf(gate) * up;
}

/// d silu(x) / dx times the result's gradient.
INFIR2_HD float siluGradOf(float x, float dy) {
  float s = sigmoidOf(x);
  return dy * (s + x * s * (1.0f - s));
}

/// SwiGLU's gradients with respect to the gate and the up projection.
INFIR2_HD void swigluGradOf(float gate, float up, float dy, float &dgate,
                            float &dup) {
  float s = sigmoidOf(gate);
  dup = dy * gate * s;
  dgate = dy * up * (s + gate * s * (1.0f - s));
}

/// 1 / sqrt(mean square + eps), from a row's sum of squares.
INFIR2_HD float rmsNormScaleOf(float sumSquares, int64_t d, float eps) {
  return 1.0f / sqrtf(sumSquares / float(d) + eps);
}

/// One AdamW step's constants: learning rate, gradient scale (averaging and
/// clipping), betas, epsilon, weight decay and the bias corrections.
struct AdamWStep {
  float lr, scale, b1, b2, eps, wd, c1, c2;
};

/// One element of AdamW (decoupled weight decay).
INFIR2_HD void adamwOf(const AdamWStep &a, float p, float g, float m, float v,
                       float &newP, float &newM, float &newV) {
  // Each operation rounded on its own (no FMA) so that both backends give
  // the same bits; sqrtf and '/' are correctly rounded on both.
  float gi = mulRn(g, a.scale);
  newM = addRn(mulRn(a.b1, m), mulRn(1.0f - a.b1, gi));
  newV = addRn(mulRn(a.b2, v), mulRn(mulRn(1.0f - a.b2, gi), gi));
  float step = (newM / a.c1) / addRn(sqrtf(newV / a.c2), a.eps);
  newP = subRn(p, mulRn(a.lr, addRn(mulRn(a.wd, p), step)));
}

/// One element of SGD with (coupled) weight decay.
INFIR2_HD float sgdOf(float lr, float scale, float wd, float p, float g) {
  return subRn(p, mulRn(lr, addRn(mulRn(g, scale), mulRn(wd, p))));
}

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_ELEMENTWISE_H
