//===- FlashAttention.cu - Attention on the tensor cores ------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// FlashAttention-2's algorithm with mma.sync (Mma.cuh): four warps per
// block of 64 rows, 16 rows each; tiles in shared memory through
// cp.async, the next tile loading while the current one is used.
//
//   forward     per (query block, head): for each key block it may see,
//               S = Q·Kᵀ, an online softmax in FP32 (log2 domain), O += P·V
//               with P rounded to BF16; O / rowsum at the end. The
//               statistics variant writes max + log2(sum) and
//               rowsum(dO ∘ O) (from O before rounding) instead of O.
//   dK, dV      per (key block, KV head): over the query heads of its group
//               and the query blocks that may see it, Pᵀ and dPᵀ = V·dOᵀ
//               recomputed from the statistics, dSᵀ = Pᵀ ∘ (dPᵀ − rowsum),
//               dV += Pᵀ·dO, dK += dSᵀ·Q; written once, no atomics.
//   dQ          per (query block, head): over its key blocks, dQ += dS·K.
//
// Masking: causal, segment ids (a query sees only keys of its own
// segment), and rows past the sequence's end. A block of keys that no
// query of the block can see (disjoint ranges of segment ids) is skipped;
// per-element masks are applied only where a block needs them. Each query
// sees at least itself, so no row's sum is zero.
//
// Arithmetic: BF16 products, FP32 sums, ex2.approx; P and dS rounded to BF16
// as the second products' operands. The tests bound the error against an
// FP64 oracle from the magnitudes of the summed terms
// (test/Unit/Runtime/AttentionOracle.h).
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "FlashAttention.cuh"
#include "Mma.cuh"
#include "Workspace.h"

#include <climits>

namespace infir2::rt::cuda {

namespace {

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
__device__ bool meet(const Args &a, int b, int64_t q0, int64_t k0) {
  if (!a.ranges)
    return true;
  int2 rq = rangeOf(a, b, q0), rk = rangeOf(a, b, k0);
  return rq.x <= rk.y && rk.x <= rq.y;
}

/// Whether queries [q0, q0 + nq) and keys [k0, k0 + nk) need per-element
/// masks: a causal diagonal, rows past the end, or several segments.
__device__ bool needsMask(const Args &a, int b, int64_t q0, int nq,
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

template <int D, bool kStats>
__global__ void __launch_bounds__(kThreads) forwardKernel(Args a) {
  constexpr int kTile = kRows * (D + kPad);
  extern __shared__ __align__(16) Tile smem[];
  __shared__ int32_t sSeg[2][kRows];
  Tile *sQ = smem, *sK = smem + kTile, *sV = sK + 2 * kTile;
  const int qb = a.blocks - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int64_t q0 = int64_t(qb) * kRows, kvOffset = (h / a.group) * D;
  const Tile *Q = a.q + b * a.seq * a.qw + h * D;
  loadRows<D, kRows>(sQ, Q, a.qw, q0, a.seq);
  const Rows rows(a, b, q0);
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float o[D / 8][4] = {};
  overKeyBlocks<D>(
      a, b, qb, a.k + b * a.seq * a.kw + kvOffset,
      a.v + b * a.seq * a.kw + kvOffset, sK, sV, sSeg,
      [&](int64_t k0, int buf) {
        float s[kRows / 8][4] = {};
        rowsByRows<D>(s, sQ, threadIdx.x / 32 * 16, sK + buf * kTile);
        bool mask = needsMask(a, b, q0, kRows, k0, kRows);
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          float mx = -INFINITY;
#pragma unroll
          for (int n = 0; n < kRows / 8; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              float &x = s[n][2 * r + e];
              x *= a.scaleLog2;
              int c = columnOf(n, e);
              if (mask && !sees(a, rows.at[r], k0 + c, rows.seg[r],
                                a.segments ? sSeg[buf][c] : 0))
                x = -INFINITY;
              mx = fmaxf(mx, x);
            }
          mx = fmaxf(mx, __shfl_xor_sync(~0u, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(~0u, mx, 2));
          float now = fmaxf(m[r], mx), base = now == -INFINITY ? 0.0f : now;
          float alpha = exp2Approx(m[r] - base), sum = 0.0f;
          m[r] = now;
#pragma unroll
          for (int n = 0; n < kRows / 8; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e)
              sum += s[n][2 * r + e] = exp2Approx(s[n][2 * r + e] - base);
          l[r] = l[r] * alpha + sum;
#pragma unroll
          for (int d = 0; d < D / 8; ++d) {
            o[d][2 * r] *= alpha;
            o[d][2 * r + 1] *= alpha;
          }
        }
        fragsByRows<D>(o, s, sV + buf * kTile);
      });
  const Tile *dO = a.dout + b * a.seq * a.qw + h * D;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum = quadSum(l[r]), inverse = 1.0f / sum, dot = 0.0f;
    bool in = rows.at[r] < a.seq;
    int64_t at = (b * a.seq + rows.at[r]) * a.qw + h * D;
#pragma unroll
    for (int d = 0; d < D / 8; ++d)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float value = o[d][2 * r + e] * inverse;
        int c = columnOf(d, e);
        if (!kStats && in)
          a.out.set(at + c, value);
        if (kStats && in)
          dot += value * bf16(dO[rows.at[r] * a.qw + c]);
      }
    if (kStats) {
      dot = quadSum(dot);
      if (in && threadIdx.x % 4 == 0) {
        int64_t i = (b * a.heads + h) * a.seq + rows.at[r];
        a.lse[i] = m[r] + log2f(sum);
        a.delta[i] = dot;
      }
    }
  }
}

/// dK and dV of key block blockIdx.x of KV head blockIdx.y, over BR
/// queries at a time.
template <int D, int BR>
__global__ void __launch_bounds__(kThreads) keyValueGradKernel(Args a) {
  constexpr int kTile = kRows * (D + kPad), kQTile = BR * (D + kPad);
  extern __shared__ __align__(16) Tile smem[];
  __shared__ float sLse[2][BR], sDelta[2][BR];
  __shared__ int32_t sSeg[2][BR];
  Tile *sK = smem, *sV = sK + kTile, *sQ = sV + kTile, *sO = sQ + 2 * kQTile;
  const int kh = blockIdx.y, b = blockIdx.z;
  const int64_t k0 = int64_t(blockIdx.x) * kRows;
  const Tile *K = a.k + b * a.seq * a.kw + kh * D,
             *V = a.v + b * a.seq * a.kw + kh * D;
  loadRows<D, kRows>(sK, K, a.kw, k0, a.seq);
  loadRows<D, kRows>(sV, V, a.kw, k0, a.seq);
  mma::commit();
  const int nq = int((a.seq + BR - 1) / BR), total = int(a.group) * nq;
  const int first = a.causal ? int(k0 / BR) : 0;
  const int32_t *seg = a.segments ? a.segments + b * a.seq : nullptr;
  // Step i: query head kh·group + i / nq, query block i % nq.
  auto next = [&](int i) {
    while (i < total &&
           (i % nq < first || !meet(a, b, int64_t(i % nq) * BR, k0)))
      ++i;
    return i;
  };
  auto prefetch = [&](int i, int buf) {
    int64_t h = kh * a.group + i / nq, q0 = int64_t(i % nq) * BR;
    int64_t offset = b * a.seq * a.qw + h * D;
    loadRows<D, BR>(sQ + buf * kQTile, a.q + offset, a.qw, q0, a.seq);
    loadRows<D, BR>(sO + buf * kQTile, a.dout + offset, a.qw, q0, a.seq);
    if (threadIdx.x < BR) {
      int64_t s = q0 + threadIdx.x, at = (b * a.heads + h) * a.seq + s;
      bool in = s < a.seq;
      sLse[buf][threadIdx.x] = in ? a.lse[at] : 0.0f;
      sDelta[buf][threadIdx.x] = in ? a.delta[at] : 0.0f;
      sSeg[buf][threadIdx.x] = in && seg ? seg[s] : 0;
    }
    mma::commit();
  };
  const Rows keys(a, b, k0);
  float dk[D / 8][4] = {}, dv[D / 8][4] = {};
  int i = next(0), buf = 0;
  if (i < total)
    prefetch(i, 0);
  while (i < total) {
    int following = next(i + 1);
    if (following < total) {
      prefetch(following, buf ^ 1);
      mma::waitGroups<1>();
    } else {
      mma::waitGroups<0>();
    }
    __syncthreads();
    const Tile *q = sQ + buf * kQTile, *o = sO + buf * kQTile;
    const int64_t q0 = int64_t(i % nq) * BR;
    float p[BR / 8][4] = {}, ds[BR / 8][4] = {};
    rowsByRows<D>(p, sK, threadIdx.x / 32 * 16, q);  // Sᵀ = K·Qᵀ
    rowsByRows<D>(ds, sV, threadIdx.x / 32 * 16, o); // dPᵀ = V·dOᵀ
    bool mask = needsMask(a, b, q0, BR, k0, kRows);
#pragma unroll
    for (int n = 0; n < BR / 8; ++n)
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          int c = columnOf(n, e);
          float x = exp2Approx(p[n][2 * r + e] * a.scaleLog2 - sLse[buf][c]);
          if (mask && !sees(a, q0 + c, keys.at[r], sSeg[buf][c], keys.seg[r]))
            x = 0.0f;
          p[n][2 * r + e] = x;
          ds[n][2 * r + e] = x * (ds[n][2 * r + e] - sDelta[buf][c]) * a.scale;
        }
    fragsByRows<D>(dv, p, o);  // dV += Pᵀ·dO
    fragsByRows<D>(dk, ds, q); // dK += dSᵀ·Q
    __syncthreads();
    i = following;
    buf ^= 1;
  }
  mma::waitGroups<0>();
#pragma unroll
  for (int r = 0; r < 2; ++r)
    if (keys.at[r] < a.seq)
#pragma unroll
      for (int d = 0; d < D / 8; ++d)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          int64_t at = (b * a.seq + keys.at[r]) * a.kw + kh * D + columnOf(d, e);
          a.dk.set(at, dk[d][2 * r + e]);
          a.dv.set(at, dv[d][2 * r + e]);
        }
}

/// dQ of query block blockIdx.x (counted from the end) of head blockIdx.y.
template <int D>
__global__ void __launch_bounds__(kThreads) queryGradKernel(Args a) {
  constexpr int kTile = kRows * (D + kPad);
  extern __shared__ __align__(16) Tile smem[];
  __shared__ int32_t sSeg[2][kRows];
  Tile *sQ = smem, *sO = sQ + kTile, *sK = sO + kTile, *sV = sK + 2 * kTile;
  const int qb = a.blocks - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int64_t q0 = int64_t(qb) * kRows, kvOffset = (h / a.group) * D;
  const int64_t offset = b * a.seq * a.qw + h * D;
  loadRows<D, kRows>(sQ, a.q + offset, a.qw, q0, a.seq);
  loadRows<D, kRows>(sO, a.dout + offset, a.qw, q0, a.seq);
  const Rows rows(a, b, q0);
  float lse[2], delta[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    int64_t at = (b * a.heads + h) * a.seq + rows.at[r];
    bool in = rows.at[r] < a.seq;
    lse[r] = in ? a.lse[at] : 0.0f;
    delta[r] = in ? a.delta[at] : 0.0f;
  }
  float dq[D / 8][4] = {};
  overKeyBlocks<D>(
      a, b, qb, a.k + b * a.seq * a.kw + kvOffset,
      a.v + b * a.seq * a.kw + kvOffset, sK, sV, sSeg,
      [&](int64_t k0, int buf) {
        float s[kRows / 8][4] = {}, dp[kRows / 8][4] = {};
        const int row0 = threadIdx.x / 32 * 16;
        rowsByRows<D>(s, sQ, row0, sK + buf * kTile);  // S = Q·Kᵀ
        rowsByRows<D>(dp, sO, row0, sV + buf * kTile); // dP = dO·Vᵀ
        bool mask = needsMask(a, b, q0, kRows, k0, kRows);
#pragma unroll
        for (int n = 0; n < kRows / 8; ++n)
#pragma unroll
          for (int r = 0; r < 2; ++r)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              int c = columnOf(n, e);
              float x = exp2Approx(s[n][2 * r + e] * a.scaleLog2 - lse[r]);
              if (mask && !sees(a, rows.at[r], k0 + c, rows.seg[r],
                                a.segments ? sSeg[buf][c] : 0))
                x = 0.0f;
              s[n][2 * r + e] = x * (dp[n][2 * r + e] - delta[r]) * a.scale;
            }
        fragsByRows<D>(dq, s, sK + buf * kTile); // dQ += dS·K
      });
#pragma unroll
  for (int r = 0; r < 2; ++r)
    if (rows.at[r] < a.seq)
#pragma unroll
      for (int d = 0; d < D / 8; ++d)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          a.dq.set((b * a.seq + rows.at[r]) * a.qw + h * D + columnOf(d, e),
                   dq[d][2 * r + e]);
}

/// The smallest and largest segment id of each 64-row block.
__global__ void rangesKernel(const int32_t *segments, int64_t seq, int blocks,
                             int64_t count, int2 *ranges) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count)
    return;
  int64_t b = i / blocks, r0 = i % blocks * kRows;
  int2 range = {INT_MAX, INT_MIN};
  for (int64_t s = r0; s < r0 + kRows && s < seq; ++s) {
    int32_t id = segments[b * seq + s];
    range.x = min(range.x, id);
    range.y = max(range.y, id);
  }
  ranges[i] = range;
}

/// Launches `kernel` on `grid` with `shared` bytes of dynamic shared memory
/// (raising the kernel's limit once).
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
               const FlashProblem &p, bool statistics, Args &a) {
  a = Args{};
  a.q = static_cast<const Tile *>(p.q);
  a.k = static_cast<const Tile *>(p.k);
  a.v = static_cast<const Tile *>(p.v);
  a.dout = static_cast<const Tile *>(p.dout ? p.dout : p.q);
  a.out = p.out;
  a.dq = p.dq;
  a.dk = p.dk;
  a.dv = p.dv;
  a.segments = p.segments;
  a.seq = p.seq;
  a.heads = p.heads;
  a.group = p.heads / p.kvHeads;
  a.qw = p.heads * p.headDim;
  a.kw = p.kvHeads * p.headDim;
  a.blocks = int((p.seq + kRows - 1) / kRows);
  a.scale = p.scale;
  a.scaleLog2 = p.scale * kLog2e;
  a.causal = p.causal;
  int64_t rows = p.batch * p.heads * p.seq, count = p.batch * a.blocks;
  int2 *ranges = nullptr;
  INFIR2_CUDA_CHECK(
      ctx,
      takeWorkspace({{&ranges, p.segments ? count * int64_t(sizeof(int2)) : 0},
                     {&a.lse, statistics ? rows * 4 : 0},
                     {&a.delta, statistics ? rows * 4 : 0}}),
      where);
  if (p.segments) {
    rangesKernel<<<unsigned((count + 127) / 128), 128, 0, streamOf(ctx)>>>(
        p.segments, p.seq, a.blocks, count, ranges);
    INFIR2_CUDA_CHECK(ctx, cudaGetLastError(), where);
    a.ranges = ranges;
  }
  return 0;
}

constexpr int tileBytes(int D, int rows) { return rows * (D + kPad) * 2; }

template <int D>
int32_t forward(infir2rt_context *ctx, const char *where, const Args &a,
                dim3 grid, bool statistics) {
  int shared = 5 * tileBytes(D, kRows); // Q, two of K and of V
  return statistics
             ? launch(ctx, where, forwardKernel<D, true>, grid, shared, a)
             : launch(ctx, where, forwardKernel<D, false>, grid, shared, a);
}

template <int D>
int32_t backward(infir2rt_context *ctx, const char *where, const Args &a,
                 const FlashProblem &p) {
  // Fewer queries per step at head_dim 128: dK and dV hold 2 x 64 FP32
  // accumulators per thread already.
  constexpr int BR = D == 128 ? 32 : 64;
  dim3 grid(unsigned(a.blocks), unsigned(p.heads), unsigned(p.batch));
  if (int32_t rc = forward<D>(ctx, where, a, grid, /*statistics=*/true))
    return rc;
  if (int32_t rc = launch(ctx, where, keyValueGradKernel<D, BR>,
                          dim3(unsigned(a.blocks), unsigned(p.kvHeads),
                               unsigned(p.batch)),
                          2 * tileBytes(D, kRows) + 4 * tileBytes(D, BR), a))
    return rc;
  return launch(ctx, where, queryGradKernel<D>, grid,
                6 * tileBytes(D, kRows), a);
}

} // namespace

bool flashTakes(const FlashProblem &p, int64_t qType, int64_t kType,
                int64_t vType, int64_t doutType) {
  auto aligned = [](const void *ptr) {
    return reinterpret_cast<uintptr_t>(ptr) % 16 == 0;
  };
  return qType == INFIR2RT_BF16 && kType == INFIR2RT_BF16 &&
         vType == INFIR2RT_BF16 && doutType == INFIR2RT_BF16 &&
         (p.headDim == 64 || p.headDim == 128) && p.kvHeads > 0 &&
         p.heads % p.kvHeads == 0 && p.seq > 0 && aligned(p.q) &&
         aligned(p.k) && aligned(p.v) && (!p.dout || aligned(p.dout));
}

int32_t flashForward(infir2rt_context *ctx, const char *where,
                     const FlashProblem &p) {
  Args a;
  if (int32_t rc = argsOf(ctx, where, p, /*statistics=*/false, a))
    return rc;
  dim3 grid(unsigned(a.blocks), unsigned(p.heads), unsigned(p.batch));
  return p.headDim == 64 ? forward<64>(ctx, where, a, grid, false)
                         : forward<128>(ctx, where, a, grid, false);
}

int32_t flashBackward(infir2rt_context *ctx, const char *where,
                      const FlashProblem &p) {
  Args a;
  if (int32_t rc = argsOf(ctx, where, p, /*statistics=*/true, a))
    return rc;
  return p.headDim == 64 ? backward<64>(ctx, where, a, p)
                         : backward<128>(ctx, where, a, p);
}

} // namespace infir2::rt::cuda
