//===- Attention.cpp - Attention on the CPU -------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Causal or full grouped-query attention and its gradient, with optional
// segment ids (packed samples see only themselves), and attention of new
// tokens over a key/value cache up to their positions (the decode step's
// cache_attention, one query at a time over the keys it sees): FP32
// throughout, the products of attention and its gradient as OpenBLAS SGEMMs
// per head and block of 128 queries (a causal block reads only the keys up
// to its last query), the softmax recomputed in the backward pass; one thread per
// (batch, head), or per (batch, KV head) for the gradient, whose dK and dV
// collect from every query head of the group.
//
//===----------------------------------------------------------------------===//

#include "Operand.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace infir2::rt::cpu {

namespace {

/// The geometry of attention and its gradient.
struct Attention {
  int64_t batch, sq, skv, heads, group, hd, qw, kw;
  float scale;
  bool causal;
  Operand segments{};  ///< [batch, sq] segment ids; ptr null without them
  Operand positions{}; ///< [batch, sq] cache_attention's positions, or null

  Attention(const Call &c, int64_t numHeads, int64_t kvHeads, int64_t headDim,
            double softmaxScale) {
    Operand q = c.operand(0), k = c.operand(1);
    heads = numHeads;
    group = heads / kvHeads;
    hd = headDim;
    scale = float(softmaxScale);
    batch = q.dim(0);
    sq = q.dim(1);
    skv = k.dim(1);
    qw = heads * hd;
    kw = (heads / group) * hd;
    causal = false;
  }

  /// attention or attention_grad (A: their attributes, the same fields);
  /// `outputs`: how many results precede the optional segments operand.
  template <typename A> static Attention of(const Call &c, int64_t outputs) {
    A a = c.attrs<A>();
    Attention g(c, a.heads, a.kv_heads, a.head_dim, a.scale);
    g.causal = a.causal;
    g.segments = a.has_segments ? c.operand(outputs) : Operand{};
    return g;
  }

  /// cache_attention: (q, k_cache, v_cache, positions, out).
  static Attention overCache(const Call &c) {
    auto a = c.attrs<attrs::cache_attention>();
    Attention g(c, a.heads, a.kv_heads, a.head_dim, a.scale);
    g.positions = c.operand(3);
    return g;
  }

  /// How many keys query s of sequence b may see: its causal prefix, up to
  /// its cache position, or all.
  int64_t visible(int64_t b, int64_t s) const {
    if (positions.ptr)
      return positions.getIndex(b * sq + s) + 1;
    return causal ? s + 1 : skv;
  }

  /// Whether query s of sequence b may see key t.
  bool sees(int64_t b, int64_t s, int64_t t) const {
    return !segments.ptr ||
           segments.getIndex(b * sq + s) == segments.getIndex(b * sq + t);
  }

  /// The softmax probabilities of query (b, h, s) over the keys it sees
  /// (0 for keys of another segment).
  int64_t probabilities(const float *q, const float *k, int64_t b, int64_t h,
                        int64_t s, float *p) const {
    const float *qv = q + (b * sq + s) * qw + h * hd;
    int64_t visible = this->visible(b, s);
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t t = 0; t < visible; ++t) {
      if (!sees(b, s, t)) {
        p[t] = -std::numeric_limits<float>::infinity(); // exp gives 0
        continue;
      }
      const float *kv = k + (b * skv + t) * kw + (h / group) * hd;
      float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
      for (int64_t i = 0; i < hd; ++i)
        dot += qv[i] * kv[i];
      p[t] = scale * dot;
      mx = std::max(mx, p[t]);
    }
    float sum = 0.0f;
    for (int64_t t = 0; t < visible; ++t)
      sum += (p[t] = std::exp(p[t] - mx));
    for (int64_t t = 0; t < visible; ++t)
      p[t] /= sum;
    return visible;
  }
};

} // namespace

/// cache_attention: one new query at a time over the cache's rows up to its
/// position.
int32_t cache_attention(const Call &c) {
  Attention a = Attention::overCache(c);
  Operand q = c.operand(0), k = c.operand(1), v = c.operand(2),
          out = c.operand(4);
  for (int64_t i = 0; i < a.batch * a.sq; ++i)
    if (int64_t p = a.positions.getIndex(i); p < 0 || p >= a.skv)
      return c.fail("position %lld of query %lld is outside the cache's "
                      "%lld rows",
                      (long long)p, (long long)i, (long long)a.skv);
  Buffer bq, bk, bv, bo;
  const float *Q = q.floats(bq), *K = k.floats(bk), *V = v.floats(bv);
  float *O = out.output(bo);
#pragma omp parallel
  {
    std::vector<float> p(a.skv);
#pragma omp for collapse(2)
    for (int64_t b = 0; b < a.batch; ++b)
      for (int64_t h = 0; h < a.heads; ++h)
        for (int64_t s = 0; s < a.sq; ++s) {
          int64_t visible = a.probabilities(Q, K, b, h, s, p.data());
          float *o = O + (b * a.sq + s) * a.qw + h * a.hd;
          std::fill(o, o + a.hd, 0.0f);
          for (int64_t t = 0; t < visible; ++t) {
            const float *vv = V + (b * a.skv + t) * a.kw + (h / a.group) * a.hd;
#pragma omp simd
            for (int64_t i = 0; i < a.hd; ++i)
              o[i] += p[t] * vv[i];
          }
        }
  }
  out.store(O);
  return 0;
}

namespace {

/// One head's rows of Q (or dO, or O) and its KV head's rows of K and V,
/// in the FP32 copies, as strided matrices.
struct HeadView {
  const Attention &a;
  int64_t b;
  const float *rowsOf(const float *x, int64_t width, int64_t seq,
                      int64_t head) const {
    return x + b * seq * width + head * a.hd;
  }
};

/// Queries are taken kRows at a time: the scores of a block are kRows x
/// keys, and a causal block reads only the keys up to its last query.
constexpr int64_t kRows = 128;

/// A block of queries [r0, r1) of one head and the keys it reads, [0, n).
struct Block {
  int64_t r0, r1, n;
  int64_t rows() const { return r1 - r0; }
};

Block blockOf(const Attention &a, int64_t r0) {
  int64_t r1 = std::min(a.sq, r0 + kRows);
  return {r0, r1, a.causal ? std::min(a.skv, r1) : a.skv};
}

/// The softmax probabilities P[s - r0, t] (rows x n, row-major) of a block
/// of one head from its scores scale · Q·Kᵀ (already in `p`), masked
/// causally and by segment: masked entries are exactly 0.
void softmaxRows(const Attention &a, int64_t b, const Block &k, float *p) {
  for (int64_t s = k.r0; s < k.r1; ++s) {
    float *row = p + (s - k.r0) * k.n;
    int64_t visible = a.visible(b, s);
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t t = 0; t < visible; ++t)
      if (a.sees(b, s, t))
        mx = std::max(mx, row[t]);
    float sum = 0.0f;
    for (int64_t t = 0; t < visible; ++t)
      sum += (row[t] = a.sees(b, s, t) ? std::exp(row[t] - mx) : 0.0f);
    for (int64_t t = 0; t < visible; ++t)
      row[t] /= sum;
    std::fill(row + visible, row + k.n, 0.0f);
  }
}

/// P of a block of head h of sequence b into `p`: the scores through
/// SGEMM, then softmaxRows.
void blockProbabilities(const Attention &a, int64_t b, int64_t h,
                        const Block &k, const float *Q, const float *K,
                        float *p) {
  HeadView v{a, b};
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, k.rows(), k.n, a.hd,
              a.scale, v.rowsOf(Q, a.qw, a.sq, h) + k.r0 * a.qw, a.qw,
              v.rowsOf(K, a.kw, a.skv, h / a.group), a.kw, 0.0f, p, k.n);
  softmaxRows(a, b, k, p);
}

/// `count` per-thread work areas of `each` floats, taken before a parallel
/// region (so that running out of memory is an error of the call, not an
/// exception inside OpenMP).
struct PerThread {
  Buffer buffer;
  int64_t each;
  PerThread(int64_t count, int64_t each) : each(each) {
    buffer.resize(int64_t(omp_get_max_threads()) * count * each);
  }
  float *area(int64_t i, int64_t count) {
    return buffer.data() + (int64_t(omp_get_thread_num()) * count + i) * each;
  }
};

} // namespace

/// attention: per (sequence, head) and block of queries, S = scale · Q·Kᵀ
/// and O = P·V as FP32 GEMMs (OpenBLAS, one thread each), the softmax
/// between them row by row. Keys a query does not see get probability
/// exactly 0, so their terms add exact zeros.
int32_t attention(const Call &c) {
  Attention a = Attention::of<attrs::attention>(c, 4);
  Operand q = c.operand(0), k = c.operand(1), v = c.operand(2),
          out = c.operand(3);
  Buffer bq, bk, bv, bo;
  const float *Q = q.floats(bq), *K = k.floats(bk), *V = v.floats(bv);
  float *O = out.output(bo);
  PerThread work(1, kRows * a.skv);
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.heads; ++h) {
      HeadView view{a, b};
      float *p = work.area(0, 1);
      for (int64_t r0 = 0; r0 < a.sq; r0 += kRows) {
        Block blk = blockOf(a, r0);
        blockProbabilities(a, b, h, blk, Q, K, p);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blk.rows(),
                    a.hd, blk.n, 1.0f, p, blk.n,
                    view.rowsOf(V, a.kw, a.skv, h / a.group), a.kw, 0.0f,
                    O + (b * a.sq + r0) * a.qw + h * a.hd, a.qw);
      }
    }
  out.store(O);
  return 0;
}

/// attention_grad: per (sequence, KV head), for each query head of its
/// group and block of its queries, P recomputed as in attention, then
/// dP = dO·Vᵀ, dS = P ∘ (dP − rowsum(P ∘ dP)) · scale, dQ = dS·K,
/// dK += dSᵀ·Q, dV += Pᵀ·dO, all FP32 GEMMs. dK and dV of a KV head collect
/// from every query head of its group: one thread per (sequence, KV head)
/// keeps the accumulation race-free.
int32_t attention_grad(const Call &c) {
  Attention a = Attention::of<attrs::attention_grad>(c, 7);
  Operand q = c.operand(0), k = c.operand(1), v = c.operand(2),
          dout = c.operand(3), dq = c.operand(4), dk = c.operand(5),
          dv = c.operand(6);
  Buffer bq, bk, bv, bo, bdq, bdk, bdv;
  const float *Q = q.floats(bq), *K = k.floats(bk), *V = v.floats(bv),
              *GO = dout.floats(bo);
  float *DQ = dq.output(bdq, true), *DK = dk.output(bdk, true),
        *DV = dv.output(bdv, true);
  int64_t kvHeads = a.heads / a.group;
  PerThread work(2, kRows * a.skv);
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t kh = 0; kh < kvHeads; ++kh) {
      HeadView view{a, b};
      float *p = work.area(0, 2), *ds = work.area(1, 2);
      const float *Kh = view.rowsOf(K, a.kw, a.skv, kh),
                  *Vh = view.rowsOf(V, a.kw, a.skv, kh);
      float *dKh = DK + b * a.skv * a.kw + kh * a.hd,
            *dVh = DV + b * a.skv * a.kw + kh * a.hd;
      for (int64_t h = kh * a.group; h < (kh + 1) * a.group; ++h)
        for (int64_t r0 = 0; r0 < a.sq; r0 += kRows) {
          Block blk = blockOf(a, r0);
          int64_t rows = blk.rows(), n = blk.n;
          const float *Qb = view.rowsOf(Q, a.qw, a.sq, h) + r0 * a.qw,
                      *dOb = view.rowsOf(GO, a.qw, a.sq, h) + r0 * a.qw;
          blockProbabilities(a, b, h, blk, Q, K, p);
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n, a.hd,
                      1.0f, dOb, a.qw, Vh, a.kw, 0.0f, ds, n);
          for (int64_t s = 0; s < rows; ++s) {
            const float *pr = p + s * n;
            float *dr = ds + s * n, pdp = 0.0f;
            for (int64_t t = 0; t < n; ++t)
              pdp += pr[t] * dr[t];
#pragma omp simd
            for (int64_t t = 0; t < n; ++t)
              dr[t] = pr[t] * (dr[t] - pdp) * a.scale;
          }
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, a.hd, n,
                      1.0f, ds, n, Kh, a.kw, 1.0f,
                      DQ + (b * a.sq + r0) * a.qw + h * a.hd, a.qw);
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, a.hd, rows,
                      1.0f, ds, n, Qb, a.qw, 1.0f, dKh, a.kw);
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, a.hd, rows,
                      1.0f, p, n, dOb, a.qw, 1.0f, dVh, a.kw);
        }
    }
  dq.store(DQ);
  dk.store(DK);
  dv.store(DV);
  return 0;
}

} // namespace infir2::rt::cpu
