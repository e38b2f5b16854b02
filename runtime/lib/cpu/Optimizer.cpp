//===- Optimizer.cpp - The optimizer step on the CPU ----------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// global_norm (FP64, across the ranks under ZeRO-1), adamw, adamw_group
// and sgd on FP32 state: the update rules of Optimizer.h and Elementwise.h,
// the same functions the CUDA kernels run.
//
//===----------------------------------------------------------------------===//

#include "Operand.h"

#include "infir2/runtime/Elementwise.h"
#include "infir2/runtime/Float.h"
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
  if (c.attrs<attrs::global_norm>().across_ranks &&
      c.ctx->comm) { // ZeRO-1: every rank's shards
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
  auto a = c.attrs<attrs::adamw>();
  float scale = clippedGradScale(c.operand(6).get(0), c.operand(7).get(0),
                                 a.max_grad_norm);
  double b1 = a.beta1, b2 = a.beta2, eps = a.epsilon, wd = a.weight_decay;
  float c1 = biasCorrection(b1, t), c2 = biasCorrection(b2, t);
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

int32_t adamw_group(const Call &c) {
  // Operands: p, g, m, v (n each), lr, step, grad_scale, grad_norm, new p,
  // m, v (n each), the k working copies. Attributes: beta1, beta2, epsilon,
  // max_grad_norm, n, n weight decays, k, k parameter indices (the
  // dispatcher has checked the counts against each other).
  auto a = c.attrs<attrs::adamw_group>();
  int64_t n = a.n, k = a.k;
  if (n <= 0 || k < 0 || c.numOperands() != 7 * n + 4 + k)
    return c.fail("malformed call: %lld operands and %lld attributes for "
                  "%lld tensors",
                  (long long)c.numOperands(), (long long)c.numAttrs(),
                  (long long)n);
  float lr = c.operand(4 * n).get(0), t = c.operand(4 * n + 1).get(0);
  if (!(t >= 1.0f))
    return c.fail("step must be at least 1, got %g", double(t));
  float scale = clippedGradScale(c.operand(4 * n + 2).get(0),
                                 c.operand(4 * n + 3).get(0), a.max_grad_norm);
  double b1 = a.beta1, b2 = a.beta2;
  float c1 = biasCorrection(b1, t), c2 = biasCorrection(b2, t);
  std::vector<int64_t> workingOf(size_t(n), -1);
  for (int64_t j = 0; j < k; ++j) {
    int64_t i = a.working[j];
    if (i < 0 || i >= n)
      return c.fail("working copy #%lld names parameter #%lld, but the call "
                    "updates %lld tensors",
                    (long long)j, (long long)i, (long long)n);
    workingOf[size_t(i)] = 7 * n + 4 + j;
  }
  auto f = [&](int64_t i) { return reinterpret_cast<float *>(c.operand(i).ptr); };
  // One parallel region for the whole step; each tensor's elements are
  // split among the threads, with no barrier between tensors (element e of
  // tensor i reads and writes only element e of tensor i's buffers).
#pragma omp parallel
  for (int64_t i = 0; i < n; ++i) {
    AdamWStep step{lr,
                   scale,
                   float(b1),
                   float(b2),
                   float(a.epsilon),
                   float(a.weight_decay[i]),
                   c1,
                   c2};
    const float *P = f(i), *G = f(n + i), *M = f(2 * n + i), *V = f(3 * n + i);
    float *NP = f(4 * n + 4 + i), *NM = f(5 * n + 4 + i),
          *NV = f(6 * n + 4 + i);
    int64_t count = c.operand(i).numel;
    if (workingOf[size_t(i)] < 0) {
#pragma omp for simd schedule(static) nowait
      for (int64_t e = 0; e < count; ++e)
        adamwOf(step, P[e], G[e], M[e], V[e], NP[e], NM[e], NV[e]);
      continue;
    }
    // The working copy as infir2.convert (the copy entry) rounds it.
    Operand w = c.operand(workingOf[size_t(i)]);
    if (w.dtype == INFIR2RT_BF16) {
      auto *W = reinterpret_cast<uint16_t *>(w.ptr);
#pragma omp for simd schedule(static) nowait
      for (int64_t e = 0; e < count; ++e) {
        adamwOf(step, P[e], G[e], M[e], V[e], NP[e], NM[e], NV[e]);
        W[e] = floatToBF16(NP[e]);
      }
      continue;
    }
#pragma omp for schedule(static) nowait
    for (int64_t e = 0; e < count; ++e) {
      adamwOf(step, P[e], G[e], M[e], V[e], NP[e], NM[e], NV[e]);
      w.set(e, NP[e]);
    }
  }
  return 0;
}

int32_t sgd(const Call &c) {
  Operand p = c.operand(0), g = c.operand(1), np = c.operand(5);
  float lr = c.operand(2).get(0);
  auto a = c.attrs<attrs::sgd>();
  float scale = clippedGradScale(c.operand(3).get(0), c.operand(4).get(0),
                                 a.max_grad_norm);
  float wd = float(a.weight_decay);
  const float *P = reinterpret_cast<const float *>(p.ptr),
              *G = reinterpret_cast<const float *>(g.ptr);
  float *NP = reinterpret_cast<float *>(np.ptr);
#pragma omp parallel for simd if (p.numel > 16384)
  for (int64_t i = 0; i < p.numel; ++i)
    NP[i] = sgdOf(lr, scale, wd, P[i], G[i]);
  return 0;
}

} // namespace infir2::rt::cpu
