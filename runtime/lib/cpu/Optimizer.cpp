//===- Optimizer.cpp - The optimizer step on the CPU ----------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// global_norm (FP64, across the ranks under ZeRO-1), adamw and sgd on FP32
// state: the update rules of Optimizer.h and Elementwise.h, the same
// functions the CUDA kernels run.
//
//===----------------------------------------------------------------------===//

#include "Operand.h"

#include "infir2/runtime/Elementwise.h"
#include "infir2/runtime/Optimizer.h"

#include <cmath>
#include <vector>

namespace infir2::rt::cpu {

int32_t global_norm(const Call &c) {
  int64_t n = c.numOperands();
  float scale = c.operand(n - 2).get(0);
  double ss = 0.0;
  for (int64_t g = 0; g < n - 2; ++g) {
    Operand o = c.operand(g);
    Buffer buf;
    const float *x = o.floats(buf);
    double local = 0.0;
#pragma omp parallel for simd reduction(+ : local)
    for (int64_t i = 0; i < o.numel; ++i)
      local += double(scale * x[i]) * double(scale * x[i]);
    ss += local;
  }
  if (c.attr(0) != 0.0 && c.ctx->comm) { // ZeRO-1: every rank's shards
    float all = float(ss);
    char error[256] = {0};
    if (c.ctx->comm->all_reduce_sum(c.ctx->comm->impl, &all, 1, error,
                                    sizeof error))
      return c.fail("all-reduce of the squared norm failed: %s", error);
    ss = all;
  }
  c.operand(n - 1).set(0, float(std::sqrt(ss)));
  return 0;
}

int32_t adamw(const Call &c) {
  Operand p = c.operand(0), g = c.operand(1), m = c.operand(2),
          v = c.operand(3), np = c.operand(8), nm = c.operand(9),
          nv = c.operand(10);
  float lr = c.operand(4).get(0), t = c.operand(5).get(0);
  if (!(t >= 1.0f))
    return c.fail("step must be at least 1, got %g", double(t));
  float scale =
      clippedGradScale(c.operand(6).get(0), c.operand(7).get(0), c.attr(4));
  double b1 = c.attr(0), b2 = c.attr(1), eps = c.attr(2), wd = c.attr(3);
  float c1 = float(1.0 - std::pow(b1, double(t))),
        c2 = float(1.0 - std::pow(b2, double(t)));
  const float *P = reinterpret_cast<const float *>(p.ptr),
              *G = reinterpret_cast<const float *>(g.ptr),
              *M = reinterpret_cast<const float *>(m.ptr),
              *V = reinterpret_cast<const float *>(v.ptr);
  float *NP = reinterpret_cast<float *>(np.ptr),
        *NM = reinterpret_cast<float *>(nm.ptr),
        *NV = reinterpret_cast<float *>(nv.ptr);
  AdamWStep step{lr,         scale,     float(b1), float(b2),
                 float(eps), float(wd), c1,        c2};
  // Element i reads and writes only index i, so the loop vectorizes even
  // when the update is in place (NP == P, NM == M, NV == V).
#pragma omp parallel for simd if (p.numel > 16384)
  for (int64_t i = 0; i < p.numel; ++i)
    adamwOf(step, P[i], G[i], M[i], V[i], NP[i], NM[i], NV[i]);
  return 0;
}

int32_t sgd(const Call &c) {
  Operand p = c.operand(0), g = c.operand(1), np = c.operand(5);
  float lr = c.operand(2).get(0);
  float scale =
      clippedGradScale(c.operand(3).get(0), c.operand(4).get(0), c.attr(1));
  float wd = float(c.attr(0));
  const float *P = reinterpret_cast<const float *>(p.ptr),
              *G = reinterpret_cast<const float *>(g.ptr);
  float *NP = reinterpret_cast<float *>(np.ptr);
#pragma omp parallel for simd if (p.numel > 16384)
  for (int64_t i = 0; i < p.numel; ++i)
    NP[i] = sgdOf(lr, scale, wd, P[i], G[i]);
  return 0;
}

} // namespace infir2::rt::cpu
