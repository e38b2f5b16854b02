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

#include "FlashTiles.cuh"
#include "Workspace.h"

#include <climits>

namespace infir2::rt::cuda {

namespace flash {
namespace {

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

template <int D>
int32_t forward(infir2rt_context *ctx, const char *where, const Args &a,
                dim3 grid, bool statistics) {
  int shared = 5 * tileBytes(D, kRows); // Q, two of K and of V
  return statistics
             ? launch(ctx, where, forwardKernel<D, true>, grid, shared, a)
             : launch(ctx, where, forwardKernel<D, false>, grid, shared, a);
}

} // namespace

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

int32_t statistics(infir2rt_context *ctx, const char *where, const Args &a,
                   dim3 grid, int64_t headDim) {
  return headDim == 64 ? forward<64>(ctx, where, a, grid, true)
                       : forward<128>(ctx, where, a, grid, true);
}

} // namespace flash

using namespace flash;

bool flashTakes(const FlashProblem &p, int64_t qType, int64_t kType,
                int64_t vType, int64_t doutType) {
  auto aligned = [](const void *ptr) {
    return reinterpret_cast<uintptr_t>(ptr) % 16 == 0;
  };
  return qType == INFIR2RT_BF16 && kType == INFIR2RT_BF16 &&
         vType == INFIR2RT_BF16 && doutType == INFIR2RT_BF16 &&
         (p.headDim == 64 || p.headDim == 128) && p.kvHeads > 0 &&
         p.heads % p.kvHeads == 0 && p.seq > 0 && aligned(p.q) &&
         aligned(p.k) && aligned(p.v) && (!p.dout || aligned(p.dout)) &&
         // The grid: query blocks, heads and sequences.
         p.batch > 0 && p.batch <= 65535 && p.heads <= 65535 &&
         (p.seq + kRows - 1) / kRows <= INT_MAX;
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

} // namespace infir2::rt::cuda
