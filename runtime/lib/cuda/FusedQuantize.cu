//===- FusedQuantize.cu - RMSNorm / SwiGLU with FP8 output ----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// rms_norm_quantize_dual and swiglu_quantize_dual: the producer's kernel
// stores its high-precision result and, in the same pass, feeds the amaxes
// of both FP8 layouts; the quantizer's scale and cast passes follow. Against
// the unfused pair of calls this saves the quantizer's amax pass, a full
// read of the result, and gives the same bytes: the values come from the
// same device functions (Producers.cuh), and the amaxes are order-free.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "Producers.cuh"
#include "Quantize.cuh"
#include "infir2/runtime/CUDA.h"
#include "infir2/runtime/Descriptor.h"

namespace {

namespace attrs = infir2::rt::attrs;
using infir2::rt::descOperand;
using infir2::rt::subDescriptor;
using infir2::rt::cuda::AmaxSink;
using infir2::rt::cuda::viewOf;

bool floatOperand(const infir2::rt::DescOperand &o) {
  return o.dtype == INFIR2RT_F32 || o.dtype == INFIR2RT_BF16;
}

int32_t normPass(infir2rt_context *ctx, const int64_t *desc,
                 const AmaxSink &sink) {
  auto x = descOperand(ctx, desc, 0), w = descOperand(ctx, desc, 1),
       out = descOperand(ctx, desc, 2);
  int64_t d = x.shape[x.rank - 1];
  infir2::rt::cuda::rmsNormKernel<<<unsigned(x.numel / d), 256, 0,
                                    infir2::rt::cuda::streamOf(ctx)>>>(
      viewOf(x), viewOf(w), viewOf(out), d,
      float(attrs::decode<attrs::rms_norm_quantize_dual>(desc).epsilon), sink);
  return infir2::rt::cuda::check(ctx, cudaGetLastError(), "rmsNormKernel",
                                 "rms_norm_quantize_dual");
}

int32_t swigluPass(infir2rt_context *ctx, const int64_t *desc,
                   const AmaxSink &sink) {
  auto g = descOperand(ctx, desc, 0), u = descOperand(ctx, desc, 1),
       out = descOperand(ctx, desc, 2);
  infir2::rt::cuda::swigluKernel<<<unsigned((out.numel + 255) / 256), 256, 0,
                                   infir2::rt::cuda::streamOf(ctx)>>>(
      viewOf(g), viewOf(u), viewOf(out), sink);
  return infir2::rt::cuda::check(ctx, cudaGetLastError(), "swigluKernel",
                                 "swiglu_quantize_dual");
}

/// Operands (a, b, out, data, scale, data_t, scale_t); F: the fused entry's
/// attributes, the quantization's among them.
template <typename F>
int32_t fused(infir2rt_context *ctx, const int64_t *desc, const char *where,
              infir2::rt::cuda::AmaxPass pass) {
  for (int64_t i = 0; i < 3; ++i)
    if (!floatOperand(descOperand(ctx, desc, i)))
      return infir2::rt::setCallError(ctx, where, "%s",
                                  "the CUDA kernel takes f32 or bf16 operands");
  std::vector<int64_t> quantize = subDescriptor(
      desc, {2, 3, 4, 5, 6},
      attrs::encoded(attrs::quantizePart(attrs::decode<F>(desc))));
  return infir2::rt::cuda::quantizeWith(ctx, quantize.data(), where,
                                        /*dual=*/true, pass, desc);
}

} // namespace

extern "C" int32_t infir2rt_cuda_rms_norm_quantize_dual(infir2rt_context *ctx,
                                                        const int64_t *desc,
                                                        const char *where) {
  return fused<attrs::rms_norm_quantize_dual>(ctx, desc, where, normPass);
}

extern "C" int32_t infir2rt_cuda_swiglu_quantize_dual(infir2rt_context *ctx,
                                                      const int64_t *desc,
                                                      const char *where) {
  return fused<attrs::swiglu_quantize_dual>(ctx, desc, where, swigluPass);
}
