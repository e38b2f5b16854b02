//===- ScaleLayout.cu - FP8 scales as cuBLASLt reads them -----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// ScaleLayout.cuh says what each layout is.
//
//===----------------------------------------------------------------------===//

#include "ScaleLayout.cuh"

#include "CudaCheck.h"
#include "MxTiles.h"

#include <cublasLt.h>

#include <atomic>

using infir2::rt::setCallError;

namespace {

/// VEC32_UE8M0 (MXFP8): [rows, S] row-major E8M0 scales -> the tiled layout
/// (MxTiles.h), zeros as padding.
__global__ void mxLayoutKernel(const uint8_t *in, uint8_t *out, int64_t rows,
                               int64_t S, int64_t total) {
  int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= total)
    return;
  int64_t from = infir2::rt::cuda::mxTiledSource(t, rows, S);
  out[t] = from >= 0 ? in[from] : uint8_t(0);
}

/// VEC128: [rows, L] row-major -> M-major (kb·rows + i).
__global__ void vecLayoutKernel(const float *in, float *out, int64_t rows,
                                int64_t L) {
  int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= rows * L)
    return;
  int64_t i = t / L, kb = t % L;
  out[kb * rows + i] = in[t];
}

/// BLK128x128: [R/128, L] row-major -> K-block stride padded to L4, zeros in
/// the padding.
__global__ void blkLayoutKernel(const float *in, float *out, int64_t rb,
                                int64_t L, int64_t L4) {
  int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= rb * L4)
    return;
  int64_t mb = t / L4, kb = t % L4;
  out[t] = kb < L ? in[mb * L + kb] : 0.0f;
}

} // namespace

namespace infir2::rt::cuda {

bool scaleModeOf(const DescOperand &x, const DescOperand &scale,
                 const int64_t *block, ScaleMode &mode) {
  bool whole = true, leadOne = true;
  for (int64_t i = 0; i < x.rank; ++i)
    whole &= block[i] == x.shape[i];
  for (int64_t i = 0; i + 2 < x.rank; ++i)
    leadOne &= block[i] == 1;
  int64_t br = x.rank >= 2 ? block[x.rank - 2] : 1, bc = block[x.rank - 1];
  if (whole)
    mode = ScaleMode::Scalar; // one block: tensorwise
  else if (leadOne && br == 1 && bc == 128)
    mode = ScaleMode::Vec128;
  else if (x.rank == 2 && br == 128 && bc == 128)
    mode = ScaleMode::Blk128;
  else if (leadOne && br == 1 && bc == 32 && scale.dtype == INFIR2RT_E8M0)
    mode = ScaleMode::Mx32;
  else
    return false;
  if ((mode == ScaleMode::Mx32) != (scale.dtype == INFIR2RT_E8M0))
    return false; // E8M0 scales are MX blocks' only
  return true;
}

int32_t requireArchitecture(infir2rt_context *ctx, const char *where, bool mx) {
  static std::atomic<int> majors[64] = {}; // 0: not read yet
  int device = 0;
  INFIR2_CUDA_CHECK(ctx, cudaGetDevice(&device), where);
  int major = majors[device % 64].load(std::memory_order_relaxed);
  if (major == 0) {
    INFIR2_CUDA_CHECK(ctx,
                      cudaDeviceGetAttribute(
                          &major, cudaDevAttrComputeCapabilityMajor, device),
                      where);
    majors[device % 64].store(major, std::memory_order_relaxed);
  }
  if (mx ? major >= 10 : major == 9)
    return 0;
  cudaDeviceProp prop{};
  INFIR2_CUDA_CHECK(ctx, cudaGetDeviceProperties(&prop, device), where);
  if (mx)
    return setCallError(ctx, where,
                        "MXFP8 GEMMs (granularity=mxfp8) need a Blackwell GPU "
                        "(compute capability 10.0); this is %s "
                        "(compute capability %d.%d): compile the trainer with "
                        "granularity=blockwise for it",
                        prop.name, prop.major, prop.minor);
  return setCallError(ctx, where,
                      "128-wide block-scaled FP8 GEMMs (granularity=blockwise) "
                      "need a Hopper GPU (compute capability 9.0); this is %s "
                      "(compute capability %d.%d): compile "
                      "the trainer with granularity=mxfp8 for it",
                      prop.name, prop.major, prop.minor);
}

int32_t cublasScaleMode(ScaleMode m) {
  switch (m) {
  case ScaleMode::Scalar:
    return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  case ScaleMode::Vec128:
    return CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
  case ScaleMode::Blk128:
    return CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
  case ScaleMode::Mx32:
    return CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0;
  }
  return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
}

int64_t scaleLayoutBytes(ScaleMode m, int64_t rows, int64_t K) {
  int64_t L = (K + 127) / 128, L4 = (L + 3) / 4 * 4;
  int64_t f = int64_t(sizeof(float));
  switch (m) {
  case ScaleMode::Scalar:
    return 0;
  case ScaleMode::Vec128:
    return rows * L * f;
  case ScaleMode::Blk128:
    return (rows + 127) / 128 * L4 * f;
  case ScaleMode::Mx32:
    return mxTiledBytes(rows, K / 32);
  }
  return 0;
}

int32_t layoutScales(infir2rt_context *ctx, const char *where,
                     const DescOperand &scale, ScaleMode m, int64_t rows,
                     int64_t K, void **out) {
  if (m == ScaleMode::Scalar) {
    *out = scale.ptr;
    return 0;
  }
  int64_t L = (K + 127) / 128, L4 = (L + 3) / 4 * 4;
  int64_t bytes = scaleLayoutBytes(m, rows, K);
  int64_t n = m == ScaleMode::Mx32 ? bytes : bytes / int64_t(sizeof(float));
  const int threads = 256;
  unsigned grid = unsigned((n + threads - 1) / threads);
  const float *in = reinterpret_cast<const float *>(scale.ptr);
  float *to = static_cast<float *>(*out);
  cudaStream_t stream = streamOf(ctx);
  if (m == ScaleMode::Mx32)
    mxLayoutKernel<<<grid, threads, 0, stream>>>(
        scale.ptr, static_cast<uint8_t *>(*out), rows, K / 32, n);
  else if (m == ScaleMode::Vec128)
    vecLayoutKernel<<<grid, threads, 0, stream>>>(in, to, rows, L);
  else
    blkLayoutKernel<<<grid, threads, 0, stream>>>(in, to, (rows + 127) / 128, L,
                                                  L4);
  INFIR2_CUDA_CHECK(ctx, cudaGetLastError(), where);
  return 0;
}

} // namespace infir2::rt::cuda
