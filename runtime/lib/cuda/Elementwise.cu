//===- Elementwise.cu - Casts, element-wise ops, RMSNorm, AdamW on the GPU ===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of the CPU backend's copy (with conversion), add, mul
// (suffix broadcast), silu, swiglu, rms_norm and adamw entry points, with
// the same descriptors. Like the CPU backend they read operands as FP32,
// compute in FP32 and round once to the result type. Transcendentals use
// CUDA's expf/sqrtf, whose last-bit results may differ from glibc's, so the
// GPU test allows one unit in the last place of the result type.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "Deferred.h"
#include "DeviceView.cuh"
#include "Producers.cuh"
#include "Workspace.h"
#include "infir2/runtime/CUDA.h"
#include "infir2/runtime/Descriptor.h"
#include "infir2/runtime/Elementwise.h"
#include "infir2/runtime/Optimizer.h"

#include <cuda_bf16.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

using Operand = infir2::rt::DescOperand;
namespace attrs = infir2::rt::attrs;
using infir2::rt::descOperandCount;
using infir2::rt::setCallError;
using infir2::rt::descOperand;

Operand descOperand(infir2rt_context *ctx, const int64_t *desc, int64_t i) {
  const int64_t *w = desc + 2 + i * INFIR2RT_OPERAND_WORDS;
  return {ctx->regions[w[0]] + w[3], w[1], w[2], w[4], w + 5};
}

using infir2::rt::cuda::View;
using infir2::rt::cuda::viewOf;

bool floatOperands(const int64_t *desc, infir2rt_context *ctx) {
  for (int64_t i = 0; i < desc[0]; ++i) {
    int64_t t = descOperand(ctx, desc, i).dtype;
    if (t != INFIR2RT_F32 && t != INFIR2RT_BF16)
      return false;
  }
  return true;
}

enum class Op { Copy, Add, Mul, Silu, Swiglu, SiluGrad };

__global__ void elementwiseKernel(Op op, View a, View b, View out) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= out.numel)
    return;
  float x = a.get(i), r = x;
  switch (op) {
  case Op::Copy:
    break;
  case Op::Add:
    r = x + b.get(i % b.numel);
    break;
  case Op::Mul:
    r = x * b.get(i % b.numel);
    break;
  case Op::Silu:
    r = infir2::rt::siluOf(x);
    break;
  case Op::Swiglu:
    r = infir2::rt::swigluOf(x, b.get(i));
    break;
  case Op::SiluGrad:
    r = infir2::rt::siluGradOf(x, b.get(i));
    break;
  }
  out.set(i, r);
}

int32_t elementwise(infir2rt_context *ctx, const int64_t *desc,
                    const char *where, Op op, int inputs) {
  if (!floatOperands(desc, ctx))
    return setCallError(ctx, where, "%s",
                    "the CUDA kernel takes f32 or bf16 operands");
  View a = viewOf(descOperand(ctx, desc, 0));
  View b = inputs > 1 ? viewOf(descOperand(ctx, desc, 1)) : a;
  View out = viewOf(descOperand(ctx, desc, inputs));
  const int threads = 256;
  elementwiseKernel<<<unsigned((out.numel + threads - 1) / threads), threads, 0,
                      infir2::rt::cuda::streamOf(ctx)>>>(op, a, b, out);
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

__global__ void swigluGradKernel(View g, View u, View dy, View dg, View du) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= g.numel)
    return;
  float dgi, dui;
  infir2::rt::swigluGradOf(g.get(i), u.get(i), dy.get(i), dgi, dui);
  du.set(i, dui);
  dg.set(i, dgi);
}

/// An optimizer step's scalars, read and combined on the device (no host
/// round trip): the learning rate, the step, the gradient scale and the
/// global norm come from the state; the CPU backend's formulas give the
/// same bits (Optimizer.h).
struct Scalars {
  const float *lr, *step, *gradScale, *norm;
};

Scalars scalarsAt(infir2rt_context *ctx, const int64_t *desc, int64_t first) {
  auto at = [&](int64_t i) {
    return reinterpret_cast<const float *>(descOperand(ctx, desc, i).ptr);
  };
  return {at(first), at(first + 1), at(first + 2), at(first + 3)};
}

/// "step must be at least 1, got T": the detail holds T's bits.
void stepText(unsigned long long, unsigned long long detail, int64_t, int64_t,
              char *out, size_t size) {
  uint32_t bits = uint32_t(detail);
  float t;
  std::memcpy(&t, &bits, sizeof t);
  std::snprintf(out, size, "step must be at least 1, got %g", double(t));
}

/// AdamW's step on the device, weight decay left to each tensor; `refused`
/// when the step number is below 1 (the update kernels then write nothing).
struct DeviceStep {
  infir2::rt::AdamWStep step;
  int refused;
};

/// One thread: the step's scalars, or the refusal of a step below 1.
__global__ void adamwStepKernel(Scalars in, double b1, double b2, float eps,
                                double maxNorm, DeviceStep *out,
                                infir2::rt::cuda::RefusalSlot slot) {
  float t = *in.step;
  out->refused = !(t >= 1.0f);
  if (out->refused) {
    atomicMin(slot.word, slot.tag);
    atomicMin(slot.detail, (unsigned long long)__float_as_uint(t));
    return;
  }
  out->step = {*in.lr,
               infir2::rt::clippedGradScale(*in.gradScale, *in.norm, maxNorm),
               float(b1),
               float(b2),
               eps,
               0.0f,
               infir2::rt::biasCorrection(b1, t),
               infir2::rt::biasCorrection(b2, t)};
}

/// SGD; each block's first thread combines the scalars once for it.
__global__ void sgdKernel(const float *p, const float *g, float *np, int64_t n,
                          Scalars in, double maxNorm, float wd) {
  __shared__ float lr, scale;
  if (threadIdx.x == 0) {
    lr = *in.lr;
    scale = infir2::rt::clippedGradScale(*in.gradScale, *in.norm, maxNorm);
  }
  __syncthreads();
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    np[i] = infir2::rt::sgdOf(lr, scale, wd, p[i], g[i]);
}

/// AdamW's moments, read and written: FP32 or BF16 (widened on read,
/// rounded to nearest even on write, as the CPU backend).
struct Moments {
  View m, v, nm, nv;
};

/// AdamW on n elements with the device's step (and weight decay wd), and
/// the updated master rounded to its working copy `w` where there is one
/// (FP32 or BF16, as the copy entry rounds it).
__global__ void adamwKernel(const float *p, const float *g, Moments mv,
                            float *np, View w, int64_t n,
                            const DeviceStep *base, float wd) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n || base->refused)
    return;
  infir2::rt::AdamWStep step = base->step;
  step.wd = wd;
  float m, v;
  infir2::rt::adamwOf(step, p[i], g[i], mv.m.get(i), mv.v.get(i), np[i], m, v);
  mv.nm.set(i, m);
  mv.nv.set(i, v);
  if (w.ptr)
    w.set(i, np[i]);
}

/// Whether AdamW's moments `m` are of a type the kernel takes, all alike.
bool momentsOk(const Moments &mv) {
  return (mv.m.dtype == INFIR2RT_F32 || mv.m.dtype == INFIR2RT_BF16) &&
         mv.v.dtype == mv.m.dtype && mv.nm.dtype == mv.m.dtype &&
         mv.nv.dtype == mv.m.dtype;
}

/// The step's scalars into the workspace (`own`: the refusal's words when
/// the call has no step stream): launched on the call's stream.
int32_t adamwStep(infir2rt_context *ctx, const char *where, Scalars in,
                  double b1, double b2, float eps, double maxNorm,
                  DeviceStep **step, unsigned long long **own,
                  infir2::rt::cuda::RefusalKind &kind,
                  infir2::rt::cuda::RefusalSlot &slot) {
  INFIR2_CUDA_CHECK(
      ctx,
      infir2::rt::cuda::takeWorkspace({{step, sizeof(DeviceStep)}, {own, 16}}),
      where);
  kind = {INFIR2RT_FAILED, stepText, 0, 0};
  if (int32_t rc = infir2::rt::cuda::openRefusal(ctx, where, kind,
                                                 /*detail=*/true, *own, slot))
    return rc;
  adamwStepKernel<<<1, 1, 0, infir2::rt::cuda::streamOf(ctx)>>>(
      in, b1, b2, eps, maxNorm, *step, slot);
  INFIR2_CUDA_CHECK(ctx, cudaGetLastError(), where);
  return 0;
}

} // namespace

extern "C" int32_t infir2rt_cuda_copy(infir2rt_context *ctx,
                                      const int64_t *desc, const char *where) {
  return elementwise(ctx, desc, where, Op::Copy, 1);
}
extern "C" int32_t infir2rt_cuda_add(infir2rt_context *ctx, const int64_t *desc,
                                     const char *where) {
  return elementwise(ctx, desc, where, Op::Add, 2);
}
extern "C" int32_t infir2rt_cuda_mul(infir2rt_context *ctx, const int64_t *desc,
                                     const char *where) {
  return elementwise(ctx, desc, where, Op::Mul, 2);
}
extern "C" int32_t infir2rt_cuda_silu(infir2rt_context *ctx,
                                      const int64_t *desc, const char *where) {
  return elementwise(ctx, desc, where, Op::Silu, 1);
}
extern "C" int32_t infir2rt_cuda_swiglu(infir2rt_context *ctx,
                                        const int64_t *desc,
                                        const char *where) {
  return elementwise(ctx, desc, where, Op::Swiglu, 2);
}

extern "C" int32_t infir2rt_cuda_rms_norm(infir2rt_context *ctx,
                                          const int64_t *desc,
                                          const char *where) {
  if (!floatOperands(desc, ctx))
    return setCallError(ctx, where, "%s",
                    "the CUDA kernel takes f32 or bf16 operands");
  Operand x = descOperand(ctx, desc, 0), w = descOperand(ctx, desc, 1),
          out = descOperand(ctx, desc, 2);
  int64_t d = x.shape[x.rank - 1];
  infir2::rt::cuda::rmsNormKernel<<<unsigned(x.numel / d), 256, 0,
                                    infir2::rt::cuda::streamOf(ctx)>>>(
      viewOf(x), viewOf(w), viewOf(out), d,
      float(attrs::decode<attrs::rms_norm>(desc).epsilon),
      infir2::rt::cuda::NoSink{});
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

extern "C" int32_t infir2rt_cuda_adamw(infir2rt_context *ctx,
                                       const int64_t *desc, const char *where) {
  Operand p = descOperand(ctx, desc, 0), g = descOperand(ctx, desc, 1),
          m = descOperand(ctx, desc, 2), v = descOperand(ctx, desc, 3),
          np = descOperand(ctx, desc, 8), nm = descOperand(ctx, desc, 9),
          nv = descOperand(ctx, desc, 10);
  Moments mv{viewOf(m), viewOf(v), viewOf(nm), viewOf(nv)};
  if (!momentsOk(mv))
    return setCallError(ctx, where, "%s",
                        "the CUDA kernel takes f32 or bf16 moments, all alike");
  DeviceStep *step = nullptr;
  unsigned long long *own = nullptr;
  infir2::rt::cuda::RefusalKind kind;
  infir2::rt::cuda::RefusalSlot slot;
  auto a = attrs::decode<attrs::adamw>(desc);
  if (int32_t rc =
          adamwStep(ctx, where, scalarsAt(ctx, desc, 4), a.beta1, a.beta2,
                    float(a.epsilon), a.max_grad_norm, &step, &own, kind, slot))
    return rc;
  const int threads = 256;
  auto f = [](const Operand &o) { return reinterpret_cast<float *>(o.ptr); };
  adamwKernel<<<unsigned((p.numel + threads - 1) / threads), threads, 0,
                infir2::rt::cuda::streamOf(ctx)>>>(f(p), f(g), mv, f(np),
                                                   View{nullptr, 0, 0}, p.numel,
                                                   step, float(a.weight_decay));
  if (int32_t rc = infir2::rt::cuda::finishLaunch(ctx, where))
    return rc;
  return infir2::rt::cuda::closeRefusal(ctx, where, kind, own, slot);
}

extern "C" int32_t infir2rt_cuda_adamw_group(infir2rt_context *ctx,
                                             const int64_t *desc,
                                             const char *where) {
  // The layout of the CPU backend's adamw_group (runtime/lib/cpu); the
  // dispatcher has checked the counts against each other.
  auto a = attrs::decode<attrs::adamw_group>(desc);
  int64_t operands = descOperandCount(desc), n = a.n, k = a.k;
  if (n <= 0 || k < 0 || operands != 7 * n + 4 + k)
    return setCallError(ctx, where,
                        "malformed call: %lld operands and %lld attributes "
                        "for %lld tensors",
                        (long long)operands,
                        (long long)infir2::rt::descAttrCount(desc),
                        (long long)n);
  std::vector<int64_t> workingOf(size_t(n), -1);
  for (int64_t j = 0; j < k; ++j) {
    int64_t i = a.working[j];
    if (i < 0 || i >= n)
      return setCallError(ctx, where,
                          "working copy #%lld names parameter #%lld, but the "
                          "call updates %lld tensors",
                          (long long)j, (long long)i, (long long)n);
    workingOf[size_t(i)] = 7 * n + 4 + j;
    // Checked before any tensor is updated: no half-applied step.
    int64_t dtype = descOperand(ctx, desc, 7 * n + 4 + j).dtype;
    if (dtype != INFIR2RT_F32 && dtype != INFIR2RT_BF16)
      return setCallError(ctx, where, "%s",
                          "the CUDA kernel takes f32 or bf16 working copies");
  }
  auto momentsOf = [&](int64_t i) {
    return Moments{viewOf(descOperand(ctx, desc, 2 * n + i)),
                   viewOf(descOperand(ctx, desc, 3 * n + i)),
                   viewOf(descOperand(ctx, desc, 5 * n + 4 + i)),
                   viewOf(descOperand(ctx, desc, 6 * n + 4 + i))};
  };
  for (int64_t i = 0; i < n; ++i)
    if (!momentsOk(momentsOf(i)) ||
        momentsOf(i).m.dtype != momentsOf(0).m.dtype)
      return setCallError(
          ctx, where, "%s",
          "the CUDA kernel takes f32 or bf16 moments, all alike");
  // The scalars once, on the device; then one launch per tensor.
  DeviceStep *step = nullptr;
  unsigned long long *own = nullptr;
  infir2::rt::cuda::RefusalKind kind;
  infir2::rt::cuda::RefusalSlot slot;
  if (int32_t rc =
          adamwStep(ctx, where, scalarsAt(ctx, desc, 4 * n), a.beta1, a.beta2,
                    float(a.epsilon), a.max_grad_norm, &step, &own, kind, slot))
    return rc;
  auto f = [&](int64_t i) {
    return reinterpret_cast<float *>(descOperand(ctx, desc, i).ptr);
  };
  const int threads = 256;
  cudaStream_t stream = infir2::rt::cuda::streamOf(ctx);
  for (int64_t i = 0; i < n; ++i) {
    int64_t count = descOperand(ctx, desc, i).numel;
    View w = workingOf[size_t(i)] < 0
                 ? View{nullptr, 0, 0}
                 : viewOf(descOperand(ctx, desc, workingOf[size_t(i)]));
    adamwKernel<<<unsigned((count + threads - 1) / threads), threads, 0,
                  stream>>>(f(i), f(n + i), momentsOf(i), f(4 * n + 4 + i), w,
                            count, step, float(a.weight_decay[i]));
  }
  if (int32_t rc = infir2::rt::cuda::finishLaunch(ctx, where))
    return rc;
  return infir2::rt::cuda::closeRefusal(ctx, where, kind, own, slot);
}

extern "C" int32_t infir2rt_cuda_silu_grad(infir2rt_context *ctx,
                                           const int64_t *desc,
                                           const char *where) {
  return elementwise(ctx, desc, where, Op::SiluGrad, 2);
}

extern "C" int32_t infir2rt_cuda_swiglu_grad(infir2rt_context *ctx,
                                             const int64_t *desc,
                                             const char *where) {
  if (!floatOperands(desc, ctx))
    return setCallError(ctx, where, "%s",
                    "the CUDA kernel takes f32 or bf16 operands");
  View g = viewOf(descOperand(ctx, desc, 0));
  swigluGradKernel<<<unsigned((g.numel + 255) / 256), 256, 0,
                     infir2::rt::cuda::streamOf(ctx)>>>(
      g, viewOf(descOperand(ctx, desc, 1)), viewOf(descOperand(ctx, desc, 2)),
      viewOf(descOperand(ctx, desc, 3)), viewOf(descOperand(ctx, desc, 4)));
  return infir2::rt::cuda::finishLaunch(ctx, where);
}

extern "C" int32_t infir2rt_cuda_sgd(infir2rt_context *ctx, const int64_t *desc,
                                     const char *where) {
  Operand p = descOperand(ctx, desc, 0), g = descOperand(ctx, desc, 1),
          np = descOperand(ctx, desc, 5);
  auto a = attrs::decode<attrs::sgd>(desc);
  // The learning rate, gradient scale and norm stay on the device.
  const float *at[3];
  for (int i = 0; i < 3; ++i)
    at[i] = reinterpret_cast<const float *>(descOperand(ctx, desc, 2 + i).ptr);
  auto f = [](const Operand &o) { return reinterpret_cast<float *>(o.ptr); };
  sgdKernel<<<unsigned((p.numel + 255) / 256), 256, 0,
              infir2::rt::cuda::streamOf(ctx)>>>(
      f(p), f(g), f(np), p.numel, Scalars{at[0], nullptr, at[1], at[2]},
      a.max_grad_norm, float(a.weight_decay));
  return infir2::rt::cuda::finishLaunch(ctx, where);
}
