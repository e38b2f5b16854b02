//===- TileQuantize.cu - FP8 quantization one 128 x 128 tile at a time ----===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The recipe's quantizations in one pass, TransformerEngine's way: a block
// of 256 threads per 128 x 128 tile of the [T, C] input reads the tile
// once (16-byte or 8-byte loads, four consecutive columns per lane), takes
// every amax it needs without atomics (a row's 128 values: one warp
// reduction; a column's 128 rows: per-lane maxima, then across the eight
// warps through shared memory; the tile: their maximum), computes the
// scales with the CPU backend's fp8Scale, casts two values per hardware
// conversion (the rounding of the CPU's floatToFP8), and
// writes the row-wise copy (4 bytes per lane, coalesced) and, for
// quantize_dual, the column-wise copy [C, T] through a transposed tile in
// shared memory (16-byte stores along T). Both copies' scales are 1 x 128
// groups or 128 x 128 blocks, as the recipe uses them. So the bytes are
// Quantize.cu's three passes', which stay for every other granularity and
// shape.
//
// A non-finite amax sets the call's flag as the three passes do; the data
// of its group is then meaningless and the call fails.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "DeviceView.cuh"
#include "Quantize.cuh"
#include "infir2/runtime/FP8.h"

#include <cuda_fp8.h>

#include <climits>

namespace infir2::rt::cuda {

namespace {

constexpr int kTile = 128, kThreads = 256, kRowsPerWarp = kTile / 8;

/// Whether a geometry's blocks are 1 x 128 groups or 128 x 128 blocks over
/// whole tiles.
bool tileBlocks(const Geometry &g) {
  return g.bc == kTile && (g.br == 1 || g.br == kTile) && g.C % kTile == 0 &&
         (g.R % kTile == 0 || g.br == 1);
}

/// Geometry::index for the geometries tileQuantizable takes (blocks of 1
/// or 128 rows by 128 columns, leading dimensions folded into the rows):
/// shifts instead of its 64-bit divisions, which cost more than the data.
__device__ inline int64_t tileIndex(const Geometry &g, int64_t row,
                                    int64_t col) {
  return (g.br == 1 ? row : row >> 7) * (g.C >> 7) + (col >> 7);
}

/// The transposed tile's word of rows 4w..4w+3 of column c: rotated by
/// c / 4 in rows padded to 33 words, so that both the stores (a lane's
/// four columns) and the 16-byte reads (eight lanes along a column) fall
/// in distinct banks.
__device__ inline int rotated(int c, int w) { return (w + (c >> 2)) & 31; }

/// The scale of an amax (as bits): fp8Scale, or a flagged 1 when it is not
/// finite (nonFiniteFlag: the smallest failing block wins).
__device__ void scaleOf(unsigned bits, const TileJob &job, int64_t block,
                        float &scale, float &inverse) {
  float a = __uint_as_float(bits);
  if (!isfinite(a)) {
    atomicMin(job.bad, job.tag | nonFiniteFlag(block, isnan(a)));
    scale = inverse = 1.0f;
    return;
  }
  scale = fp8Scale(a, job.format, job.rule);
  inverse = 1.0f / scale;
}

/// Four values scaled and cast, the first in the lowest byte: two by two
/// on the hardware (cvt.rn.satfinite), which rounds as floatToFP8 does
/// (FP8Test holds the CPU's conversion to CUDA's, for every float; the GPU
/// tests compare the bytes).
__device__ inline uint32_t cast4(const TileJob &job, float a, float b, float c,
                                 float d, float scale, float inverse) {
  auto scaled = [&](float v) {
    return job.rule != ScaleRule::FP32 ? v * inverse : v / scale;
  };
  __nv_fp8_interpretation_t kind =
      job.format == FP8Format::E4M3 ? __NV_E4M3 : __NV_E5M2;
  uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(scaled(a), scaled(b)),
                                         __NV_SATFINITE, kind),
           hi = __nv_cvt_float2_to_fp8x2(make_float2(scaled(c), scaled(d)),
                                         __NV_SATFINITE, kind);
  return lo | hi << 16;
}

/// A lane's four consecutive values of one row: BF16 as loaded, two to a
/// register (half the registers of floats, so more tiles per SM), or FP32.
template <bool kBF16> struct Four;
template <> struct Four<true> {
  uint2 h;
  __device__ void load(const uint8_t *x, int64_t at) {
    h = *reinterpret_cast<const uint2 *>(x + 2 * at);
  }
  __device__ float operator[](int j) const {
    uint32_t w = j < 2 ? h.x : h.y;
    return __uint_as_float(j % 2 ? w & 0xffff0000u : w << 16);
  }
};
template <> struct Four<false> {
  float4 f;
  __device__ void load(const uint8_t *x, int64_t at) {
    f = *reinterpret_cast<const float4 *>(x + 4 * at);
  }
  __device__ float operator[](int j) const {
    return j == 0 ? f.x : j == 1 ? f.y : j == 2 ? f.z : f.w;
  }
};

// Four tiles per SM for BF16 inputs (64 registers: 12 bytes spill, against
// 115 registers and two tiles before; Nsight Compute found the kernel
// latency-bound at 23 % occupancy), two for FP32 (the weights, once per
// optimizer step).
template <bool kBF16>
__global__ void __launch_bounds__(kThreads, kBF16 ? 4 : 2)
    tileKernel(TileJob job) {
  __shared__ unsigned colMax[8][kTile], warpMax[8];
  __shared__ float colScale[kTile], colInverse[kTile];
  __shared__ uint32_t codesT[kTile][kTile / 4 + 1]; // [column][row / 4]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t q0 = int64_t(blockIdx.y) * kTile, c0 = int64_t(blockIdx.x) * kTile;
  const int64_t C = job.g.C;
  const bool rowGroups = job.g.br == 1;
  Four<kBF16> v[kRowsPerWarp];
  unsigned colBits[4] = {0, 0, 0, 0}, tileBits = 0;
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i)
    v[i].load(job.x, (q0 + warp * kRowsPerWarp + i) * C + c0 + lane * 4);
    // Every amax; with 1 x 128 groups each row's copy is written at once.
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    unsigned m = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      // |x| as bits: non-negative floats order like their bits, and NaN's
      // exceed infinity's, so NaN wins every max.
      unsigned bits = __float_as_uint(v[i][j]) & 0x7fffffffu;
      m = max(m, bits);
      colBits[j] = max(colBits[j], bits);
    }
    unsigned rowBits = __reduce_max_sync(~0u, m);
    tileBits = max(tileBits, rowBits);
    if (rowGroups) {
      int64_t q = q0 + warp * kRowsPerWarp + i;
      float scale, inverse;
      scaleOf(rowBits, job, tileIndex(job.g, q, c0), scale, inverse);
      if (lane == 0)
        job.scale[tileIndex(job.g, q, c0)] = scale;
      *reinterpret_cast<uint32_t *>(job.data + q * C + c0 + lane * 4) =
          cast4(job, v[i][0], v[i][1], v[i][2], v[i][3], scale, inverse);
    }
  }
#pragma unroll
  for (int j = 0; j < 4; ++j)
    colMax[warp][lane * 4 + j] = colBits[j];
  if (lane == 0)
    warpMax[warp] = tileBits;
  __syncthreads();
  for (int w = 0; w < 8; ++w)
    tileBits = max(tileBits, warpMax[w]);

  // The row-wise copy in 128 x 128 blocks: one scale for the tile.
  if (!rowGroups) {
    float scale, inverse;
    scaleOf(tileBits, job, tileIndex(job.g, q0, c0), scale, inverse);
    if (threadIdx.x == 0)
      job.scale[tileIndex(job.g, q0, c0)] = scale;
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) {
      int64_t q = q0 + warp * kRowsPerWarp + i;
      *reinterpret_cast<uint32_t *>(job.data + q * C + c0 + lane * 4) =
          cast4(job, v[i][0], v[i][1], v[i][2], v[i][3], scale, inverse);
    }
  }
  if (!job.dataT)
    return;

  // The column-wise copy: [C, T], its blocks along T.
  const int64_t T = job.gt.C;
  if (threadIdx.x < kTile) {
    // A column's 128 rows, or (128 x 128 blocks) the whole tile.
    unsigned bits = 0;
    for (int w = 0; w < 8; ++w)
      bits = max(bits, colMax[w][threadIdx.x]);
    if (job.gt.br == kTile)
      bits = tileBits;
    int64_t b = tileIndex(job.gt, c0 + threadIdx.x, q0);
    scaleOf(bits, job, job.flagBaseT + b, colScale[threadIdx.x],
            colInverse[threadIdx.x]);
    if (job.gt.br == 1 || threadIdx.x == 0)
      job.scaleT[b] = colScale[threadIdx.x];
  }
  __syncthreads();
  // Each lane's 4 columns of 16 rows: codes into the transposed tile, 4
  // rows to a word.
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    int c = lane * 4 + j;
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; i += 4)
      codesT[c][rotated(c, (warp * kRowsPerWarp + i) / 4)] =
          cast4(job, v[i][j], v[i + 1][j], v[i + 2][j], v[i + 3][j],
                colScale[c], colInverse[c]);
  }
  __syncthreads();
  // 128 columns of 128 bytes: 16 bytes a store, along T.
  for (int k = threadIdx.x; k < kTile * 8; k += kThreads) {
    int c = k / 8, w = k % 8 * 4;
    uint4 out = {codesT[c][rotated(c, w)], codesT[c][rotated(c, w + 1)],
                 codesT[c][rotated(c, w + 2)], codesT[c][rotated(c, w + 3)]};
    *reinterpret_cast<uint4 *>(job.dataT + (c0 + c) * T + q0 + w * 4) = out;
  }
}

} // namespace

bool tileQuantizable(const TileJob &job) {
  auto aligned = [](const void *p, int n) {
    return reinterpret_cast<uintptr_t>(p) % n == 0;
  };
  int64_t T = job.n / job.g.C;
  if (!job.g.leadOne && job.g.R != T) // leading dimensions in one block
    return false;
  if (T <= 0 || T / kTile > 65535 || job.g.C / kTile > INT_MAX) // the grid
    return false;
  if (!tileBlocks(job.g) || T % kTile != 0 || !aligned(job.x, 16) ||
      !aligned(job.data, 4))
    return false;
  if (!job.dataT)
    return true;
  // The column-wise copy is the [C, T] matrix, blocked along T.
  return job.gt.C == T && job.gt.R == job.g.C && job.gt.leadOne &&
         tileBlocks(job.gt) && aligned(job.dataT, 16);
}

int32_t tileQuantize(infir2rt_context *ctx, const char *where,
                     const TileJob &job) {
  int64_t T = job.n / job.g.C;
  dim3 grid(unsigned(job.g.C / kTile), unsigned(T / kTile));
  if (job.dtype == INFIR2RT_BF16)
    tileKernel<true><<<grid, kThreads, 0, streamOf(ctx)>>>(job);
  else
    tileKernel<false><<<grid, kThreads, 0, streamOf(ctx)>>>(job);
  INFIR2_CUDA_CHECK(ctx, cudaGetLastError(), where);
  return 0;
}

} // namespace infir2::rt::cuda
