//===- Optimizer.cpp - The optimizer step on the CPU ----------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// global_norm (FP64, across the ranks under ZeRO-1), adamw, adamw_group
// and sgd on FP32 masters, with FP32 or BF16 moments: the update rules of
// Optimizer.h and Elementwise.h, the same functions the CUDA kernels run.
//
//===----------------------------------------------------------------------===//

#include "Operand.h"

#include "infir2/runtime/Elementwise.h"
#include "infir2/runtime/Float.h"
#include "infir2/runtime/Optimizer.h"

#include <cmath>
#include <type_traits>
#include <vector>

namespace infir2::rt::cpu {

int32_t global_norm(const Call &c) {
  int64_t n = c.numOperands();
  float scale = c.operand(n - 2).get(0);
  auto a = c.attrs<attrs::global_norm>();
  // Sums `ss` over a group in place (FP32 on the wire).
  auto overGroup = [&](const infir2rt_communicator *comm, double &ss,
                       const char *what) -> int32_t {
    float all = float(ss);
    char error[256] = {0};
    if (comm->all_reduce_sum(comm->impl, &all, 1, error, sizeof error))
      return c.fail("all-reduce of %s squared norm failed: %s", what, error);
    ss = all;
    return 0;
  };
  if (a.tp_shards > 0 && !c.ctx->tp_comm)
    return c.fail("a tensor-parallel step runs on its group, and this context "
                  "has none");
  double ss = 0.0;
  for (int64_t g = 0; g <= n - 2; ++g) {
    // After the tensor-parallel shards: their squares, over the group.
    if (g == a.tp_shards && g > 0)
      if (int32_t rc = overGroup(c.ctx->tp_comm, ss, "the shards'"))
        return rc;
    if (g == n - 2)
      break;
    Operand o = c.operand(g);
    Buffer buf;
    const float *x = o.floats(buf);
    double local = 0.0;
#pragma omp parallel for simd reduction(+ : local)
    for (int64_t i = 0; i < o.numel; ++i)
      local += double(scale * x[i]) * double(scale * x[i]);
    ss += local;
  }
  if (a.across_ranks && c.ctx->comm) // ZeRO-1: every rank's shards
    if (int32_t rc = overGroup(c.ctx->comm, ss, "the"))
      return rc;
  c.operand(n - 1).set(0, float(std::sqrt(ss)));
  return 0;
}

namespace {

/// AdamW's moments as stored: FP32, or BF16 widened on read and rounded to
/// nearest even on write.
float loadMoment(const float *m, int64_t i) { return m[i]; }
float loadMoment(const uint16_t *m, int64_t i) { return bf16ToFloat(m[i]); }
void storeMoment(float *m, int64_t i, float x) { m[i] = x; }
void storeMoment(uint16_t *m, int64_t i, float x) { m[i] = floatToBF16(x); }

/// Element i of AdamW with moments stored as `Moment` (float or uint16_t,
/// BF16); the update is computed in FP32 whatever the storage.
template <typename Moment>
inline void adamwAt(const AdamWStep &step, const float *P, const float *G,
                    const Moment *M, const Moment *V, float *NP, Moment *NM,
                    Moment *NV, int64_t i) {
  float m, v;
  adamwOf(step, P[i], G[i], loadMoment(M, i), loadMoment(V, i), NP[i], m, v);
  storeMoment(NM, i, m);
  storeMoment(NV, i, v);
}

/// `p` as moments of type `Moment`.
template <typename Moment> Moment *as(const Operand &p) {
  return reinterpret_cast<Moment *>(p.ptr);
}

/// Calls `f` with a null `float *` for FP32 moments of type `dtype`, or a
/// null `uint16_t *` for BF16 ones: the storage type the loops take.
template <typename F> void withMomentType(int64_t dtype, F f) {
  if (dtype == INFIR2RT_BF16)
    f(static_cast<uint16_t *>(nullptr));
  else
    f(static_cast<float *>(nullptr));
}

/// adamw_group's update of its `n` tensors with moments stored as `Moment`;
/// `workingOf[i]` is the operand of tensor i's working copy, or -1. `base`
/// holds the step's scalars (each tensor's weight decay is set here).
template <typename Moment>
void adamwGroup(const Call &c, const attrs::adamw_group &a, int64_t n,
                const std::vector<int64_t> &workingOf, AdamWStep base) {
  auto f = [&](int64_t i) {
    return reinterpret_cast<float *>(c.operand(i).ptr);
  };
  // One parallel region for the whole step; each tensor's elements are
  // split among the threads, with no barrier between tensors (element e of
  // tensor i reads and writes only element e of tensor i's buffers).
#pragma omp parallel
  for (int64_t i = 0; i < n; ++i) {
    AdamWStep step = base;
    step.wd = float(a.weight_decay[i]);
    const float *P = f(i), *G = f(n + i);
    float *NP = f(4 * n + 4 + i);
    const Moment *M = as<Moment>(c.operand(2 * n + i)),
                 *V = as<Moment>(c.operand(3 * n + i));
    Moment *NM = as<Moment>(c.operand(5 * n + 4 + i)),
           *NV = as<Moment>(c.operand(6 * n + 4 + i));
    int64_t count = c.operand(i).numel;
    if (workingOf[size_t(i)] < 0) {
#pragma omp for simd schedule(static) nowait
      for (int64_t e = 0; e < count; ++e)
        adamwAt(step, P, G, M, V, NP, NM, NV, e);
      continue;
    }
    // The working copy as infir2.convert (the copy entry) rounds it.
    Operand w = c.operand(workingOf[size_t(i)]);
    if (w.dtype == INFIR2RT_BF16) {
      auto *W = reinterpret_cast<uint16_t *>(w.ptr);
#pragma omp for simd schedule(static) nowait
      for (int64_t e = 0; e < count; ++e) {
        adamwAt(step, P, G, M, V, NP, NM, NV, e);
        W[e] = floatToBF16(NP[e]);
      }
      continue;
    }
#pragma omp for schedule(static) nowait
    for (int64_t e = 0; e < count; ++e) {
      adamwAt(step, P, G, M, V, NP, NM, NV, e);
      w.set(e, NP[e]);
    }
  }
}

} // namespace

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
  if ((m.dtype != INFIR2RT_F32 && m.dtype != INFIR2RT_BF16) ||
      m.dtype != v.dtype || m.dtype != nm.dtype || m.dtype != nv.dtype)
    return c.fail("the moments must be f32 or bf16, all alike");
  const float *P = reinterpret_cast<const float *>(p.ptr),
              *G = reinterpret_cast<const float *>(g.ptr);
  float *NP = reinterpret_cast<float *>(np.ptr);
  AdamWStep step{lr,         scale,     float(b1), float(b2),
                 float(eps), float(wd), c1,        c2};
  withMomentType(m.dtype, [&](auto *type) {
    using Moment = std::remove_pointer_t<decltype(type)>;
    const Moment *M = as<Moment>(m), *V = as<Moment>(v);
    Moment *NM = as<Moment>(nm), *NV = as<Moment>(nv);
    // Element i reads and writes only index i, so the loop vectorizes even
    // when the update is in place (NP == P, NM == M, NV == V).
#pragma omp parallel for simd if (p.numel > 16384)
    for (int64_t i = 0; i < p.numel; ++i)
      adamwAt<Moment>(step, P, G, M, V, NP, NM, NV, i);
  });
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
  int64_t momentType = c.operand(2 * n).dtype;
  for (int64_t i = 2 * n; i < 4 * n; ++i)
    if ((momentType != INFIR2RT_F32 && momentType != INFIR2RT_BF16) ||
        c.operand(i).dtype != momentType ||
        c.operand(i + 3 * n + 4).dtype != momentType)
      return c.fail("the moments must be f32 or bf16, all alike");
  withMomentType(momentType, [&](auto *type) {
    adamwGroup<std::remove_pointer_t<decltype(type)>>(
        c, a, n, workingOf,
        AdamWStep{lr, scale, float(b1), float(b2), float(a.epsilon), 0.0f, c1,
                  c2});
  });
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
