//===- FlashAttentionGrad.cu - Attention's gradient on the tensor cores ---===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// dQ, dK and dV of FlashAttention.cu's attention: the softmax statistics
// and rowsum(dO ∘ O) from a forward pass first (the IR keeps neither), then
// dK and dV per block of keys over the query blocks that see them, and dQ
// per block of queries over their key blocks; each written once, no
// atomics, the same bits every run.
//
//===----------------------------------------------------------------------===//

#include "FlashTiles.cuh"

namespace infir2::rt::cuda {

namespace {

using namespace flash;

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

template <int D>
int32_t backward(infir2rt_context *ctx, const char *where, const Args &a,
                 const FlashProblem &p) {
  // Fewer queries per step at head_dim 128: dK and dV hold 2 x 64 FP32
  // accumulators per thread already.
  constexpr int BR = D == 128 ? 32 : 64;
  dim3 grid(unsigned(a.blocks), unsigned(p.heads), unsigned(p.batch));
  if (int32_t rc = statistics(ctx, where, a, grid, D))
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

int32_t flashBackward(infir2rt_context *ctx, const char *where,
                      const FlashProblem &p) {
  Args a;
  if (int32_t rc = argsOf(ctx, where, p, /*statistics=*/true, a))
    return rc;
  return p.headDim == 64 ? backward<64>(ctx, where, a, p)
                         : backward<128>(ctx, where, a, p);
}

} // namespace infir2::rt::cuda
