//===- FlashTiles.cuh - The attention kernels' shared pieces ----*- CUDA -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// What the forward (FlashAttention.cu) and gradient (FlashAttentionGrad.cu)
// kernels share: the problem as the kernels see it, tile loads into shared
// memory, the two warp-level products, the masks and block skipping, the
// query-side loop over key blocks, and the host's launch and set-up. The
// algorithm and its arithmetic: FlashAttention.cu's file comment.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_FLASHTILES_CUH
#define INFIR2_RUNTIME_CUDA_FLASHTILES_CUH

#include "CudaCheck.h"
#include "DeviceView.cuh"
#include "FlashAttention.cuh"
#include "Mma.cuh"

#include <cstdint>

namespace infir2::rt::cuda::flash {

constexpr int kRows = 64;     // rows of a block: queries, or keys for dK/dV
constexpr int kThreads = 128; // four warps of 16 rows
constexpr int kPad = 8;       // BF16s after each shared row: no bank conflicts
constexpr float kLog2e = 1.4426950408889634f;

using Tile = uint16_t; // BF16 bits

struct Args {
  const Tile *q, *k, *v, *dout;
  View out, dq, dk, dv;
  float *lse;   ///< [batch, heads, seq]: row max + log2(row sum), log2 domain
  float *delta; ///< [batch, heads, seq]: rowsum(dO ∘ O)
  const int32_t *segments; ///< [batch, seq], or null
  const int2 *ranges; ///< [batch, blocks]: segment ids of each block, or null
  int64_t seq, heads, group, qw, kw;
  int blocks;
  float scale, scaleLog2;
  bool causal;
};

__device__ inline float exp2Approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ inline float bf16(Tile bits) {
  return __uint_as_float(uint32_t(bits) << 16);
}

__device__ inline float quadSum(float x) {
  x += __shfl_xor_sync(~0u, x, 1);
  return x + __shfl_xor_sync(~0u, x, 2);
}

/// Rows [r0, r0 + R) of a BF16 matrix (row r at g + r·ld, D columns) into
/// shared memory (row stride D + kPad), asynchronously; rows at or past
/// `rows` as zeros.
template <int D, int R>
__device__ void loadRows(Tile *s, const Tile *g, int64_t ld, int64_t r0,
                         int64_t rows) {
  constexpr int kChunks = D / 8; // 16 bytes each
  for (int i = threadIdx.x; i < R * kChunks; i += kThreads) {
    int r = i / kChunks, c = i % kChunks * 8;
    bool valid = r0 + r < rows;
    mma::copy16(s + r * (D + kPad) + c, g + (valid ? (r0 + r) * ld : 0) + c,
                valid);
  }
}

/// c[n] += A·Bᵀ over D columns: A = rows [a0, a0 + 16) of tile `sa`, B =
/// rows [8n, 8n + 8) of tile `sb` (the warp's 16 x 8N block).
template <int D, int N>
__device__ void rowsByRows(float (&c)[N][4], const Tile *sa, int a0,
                           const Tile *sb) {
  constexpr int LD = D + kPad;
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int kk = 0; kk < D; kk += 16) {
    uint32_t a[4];
    mma::load4(a, sa + (a0 + lane % 16) * LD + kk + lane / 16 * 8);
#pragma unroll
    for (int n = 0; n < N; n += 2) {
      uint32_t b[4];
      mma::load4(b, sb + (n * 8 + lane % 8 + lane / 16 * 8) * LD + kk +
                        lane / 8 % 2 * 8);
      mma::mma(c[n], a, b[0], b[1]);
      mma::mma(c[n + 1], a, b[2], b[3]);
    }
  }
}

/// acc += C·B: C = the warp's 16 x 8N FP32 fragments (rounded to BF16),
/// B = rows [0, 8N) of tile `sb` (D columns).
template <int D, int N>
__device__ void fragsByRows(float (&acc)[D / 8][4], const float (&c)[N][4],
                            const Tile *sb) {
  constexpr int LD = D + kPad;
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < N / 2; ++j) {
    uint32_t a[4];
    mma::aFromC(a, c, j);
#pragma unroll
    for (int d = 0; d < D; d += 16) {
      uint32_t b[4];
      mma::load4T(b, sb + (j * 16 + lane % 16) * LD + d + lane / 16 * 8);
      mma::mma(acc[d / 8], a, b[0], b[1]);
      mma::mma(acc[d / 8 + 1], a, b[2], b[3]);
    }
  }
}

__device__ inline int2 rangeOf(const Args &a, int b, int64_t row0) {
  return a.ranges[b * a.blocks + row0 / kRows];
}

/// Whether any query of the block at q0 may see a key of the block at k0
/// (their ranges of segment ids meet).
__device__ inline bool meet(const Args &a, int b, int64_t q0, int64_t k0) {
  if (!a.ranges)
    return true;
  int2 rq = rangeOf(a, b, q0), rk = rangeOf(a, b, k0);
  return rq.x <= rk.y && rk.x <= rq.y;
}

/// Whether queries [q0, q0 + nq) and keys [k0, k0 + nk) need per-element
/// masks: a causal diagonal, rows past the end, or several segments.
__device__ inline bool needsMask(const Args &a, int b, int64_t q0, int nq,
                          int64_t k0, int nk) {
  if ((a.causal && k0 + nk - 1 > q0) || q0 + nq > a.seq || k0 + nk > a.seq)
    return true;
  if (!a.ranges)
    return false;
  int2 rq = rangeOf(a, b, q0), rk = rangeOf(a, b, k0);
  return !(rq.x == rq.y && rk.x == rk.y && rq.x == rk.x);
}

/// Whether query s sees key t, with their segment ids (0 without).
__device__ inline bool sees(const Args &a, int64_t s, int64_t t, int32_t segS,
                            int32_t segT) {
  return s < a.seq && t < a.seq && (!a.causal || t <= s) && segS == segT;
}

/// The query-side loop of the forward pass and dQ: calls body(k0, buf) for
/// each key block that query block qb may see, with its keys and values in
/// buffer `buf` of sK / sV and their segment ids in sSeg[buf]. Loads
/// issued before the call complete with the first block's.
template <int D, typename Body>
__device__ void overKeyBlocks(const Args &a, int b, int qb, const Tile *K,
                              const Tile *V, Tile *sK, Tile *sV,
                              int32_t (*sSeg)[kRows], Body body) {
  constexpr int kTile = kRows * (D + kPad);
  const int64_t q0 = int64_t(qb) * kRows;
  const int last = a.causal ? qb : a.blocks - 1;
  const int32_t *seg = a.segments ? a.segments + b * a.seq : nullptr;
  auto next = [&](int kb) {
    while (kb <= last && !meet(a, b, q0, int64_t(kb) * kRows))
      ++kb;
    return kb;
  };
  auto prefetch = [&](int kb, int buf) {
    int64_t k0 = int64_t(kb) * kRows;
    loadRows<D, kRows>(sK + buf * kTile, K, a.kw, k0, a.seq);
    loadRows<D, kRows>(sV + buf * kTile, V, a.kw, k0, a.seq);
    if (seg && threadIdx.x < kRows)
      sSeg[buf][threadIdx.x] =
          k0 + threadIdx.x < a.seq ? seg[k0 + threadIdx.x] : 0;
    mma::commit();
  };
  int kb = next(0), buf = 0;
  if (kb <= last)
    prefetch(kb, 0);
  while (kb <= last) {
    int following = next(kb + 1);
    if (following <= last) {
      prefetch(following, buf ^ 1);
      mma::waitGroups<1>();
    } else {
      mma::waitGroups<0>();
    }
    __syncthreads();
    body(int64_t(kb) * kRows, buf);
    __syncthreads();
    kb = following;
    buf ^= 1;
  }
  mma::waitGroups<0>();
}

/// This thread's two rows of its warp's 16 (g and g + 8).
struct Rows {
  int64_t at[2];
  int32_t seg[2];
  __device__ Rows(const Args &a, int b, int64_t r0) {
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      at[r] = r0 + warp * 16 + lane / 4 + 8 * r;
      seg[r] = a.segments && at[r] < a.seq ? a.segments[b * a.seq + at[r]] : 0;
    }
  }
};

/// The column of element e of 8-column tile n in this thread's fragments.
__device__ inline int columnOf(int n, int e) {
  return n * 8 + threadIdx.x % 4 * 2 + e;
}

constexpr int tileBytes(int D, int rows) { return rows * (D + kPad) * 2; }

/// Launches `kernel` on `grid` with `shared` bytes of dynamic shared memory
/// (raising the kernel's limit first: a cheap host call, no synchronization).
template <typename Kernel>
int32_t launch(infir2rt_context *ctx, const char *where, Kernel kernel,
               dim3 grid, int shared, const Args &a) {
  INFIR2_CUDA_CHECK(ctx,
                    cudaFuncSetAttribute(
                        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                        shared),
                    where);
  kernel<<<grid, kThreads, shared, streamOf(ctx)>>>(a);
  INFIR2_CUDA_CHECK(ctx, cudaGetLastError(), where);
  return 0;
}

/// Args of `p`, its workspace taken (the ranges with segments; the
/// statistics for the gradient).
int32_t argsOf(infir2rt_context *ctx, const char *where,
               const FlashProblem &p, bool statistics, Args &a);

/// The forward pass's statistics for the gradient (row max + log2 sum,
/// rowsum(dO ∘ O)) into a.lse and a.delta, on `grid`.
int32_t statistics(infir2rt_context *ctx, const char *where, const Args &a,
                   dim3 grid, int64_t headDim);

} // namespace infir2::rt::cuda::flash

#endif // INFIR2_RUNTIME_CUDA_FLASHTILES_CUH
