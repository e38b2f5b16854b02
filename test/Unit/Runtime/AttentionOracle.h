//===- AttentionOracle.h - Attention in FP64, with error bounds -*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// An FP64 oracle for attention and its gradient, and for each output
// element a bound on a backend's error, derived from the magnitudes of the
// terms it sums. A backend states its arithmetic (Arithmetic below): how
// P and dS are rounded before their products, and the type of each
// result. Then, with u = 2^-24 and ε_s the relative error of the
// probabilities of query s,
//
//   ε_s   = 2·max_t ξ_st + 2^-20 + S·u, ξ_st = D·u·scale·Σ_d|q_d k_td|
//           + 2u·(|x_st| + |max_t x_st|): the error of the exponent's
//           argument (FP32 dot products of D terms, the scale, the
//           subtraction of the maximum), the exponential's, the sum's;
//   O     : (ε_s + uP + S·u)·Σ_t P_t|v_td|                      + uOut·|O|
//   dP_st : D·u·Σ_d|dO_sd v_td| =: D·u·A_st
//   Δ_s   : (ε_s + uP + D·u + S·u)·Σ_t P_t A_st     (Δ = Σ_t P_t dP_st)
//   dS_st : scale·P_t·(ε_s·|dP_st − Δ_s| + D·u·A_st + Δ_s's) + uDs·|dS_st|
//   dQ    : Σ_t dS_st's·|k_td| + S·u·Σ_t|dS_st k_td|            + uOut·|dQ|
//   dK    : Σ_s dS_st's·|q_sd| + G·S·u·Σ_s|dS_st q_sd|          + uOut·|dK|
//   dV    : Σ_s (ε_s + uP)·P_st|dO_sd| + G·S·u·Σ_s P_st|dO_sd|  + uOut·|dV|
//
// (G queries heads per KV head; dK and dV sum over all of them). These
// are first-order bounds of the worst case; the tests allow twice them.
// They stay small against the terms (checked: a bound as large as its
// terms would pass anything): a wrong mask, index or scale moves an
// element by about the size of its terms. Under BF16 arithmetic the bound
// is about 2^-7 of the terms, so an error smaller than that (a key of tiny
// weight leaking through a mask) would pass there; the CPU backend's FP32
// bound, about 2^-10, is the sharper check of the shared semantics.
//
// Inputs: queries and keys of N(0, 1)·10^U(-0.5, 0.5) rows (scores from 0
// to about ±40: flat to nearly one-hot softmaxes), values and result
// gradients of N(0, 1)·10^U(-2, 2) rows; every value BF16-representable,
// so FP32 and BF16 operands hold the same numbers.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TEST_UNIT_RUNTIME_ATTENTIONORACLE_H
#define INFIR2_TEST_UNIT_RUNTIME_ATTENTIONORACLE_H

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Float.h"

#include "DescriptorBuilder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace infir2::test {

struct AttentionShape {
  int64_t batch, seq, heads, kvHeads, headDim;
  bool causal, packed;
};

/// One attention problem and its operands' values.
struct AttentionCase {
  AttentionShape shape;
  float scale; ///< 1/sqrt(head_dim), as the backends read it
  std::vector<float> q, k, v, dout;
  std::vector<int32_t> segments; ///< [batch, seq] when packed
};

inline AttentionCase makeAttentionCase(const AttentionShape &sh,
                                       std::mt19937_64 &rng) {
  AttentionCase c{sh, float(1.0 / std::sqrt(double(sh.headDim))), {}, {},
                  {}, {}, {}};
  std::normal_distribution<float> normal;
  auto rows = [&](std::vector<float> &x, int64_t width, float lo, float hi) {
    std::uniform_real_distribution<float> exponent(lo, hi);
    x.resize(sh.batch * sh.seq * width);
    for (int64_t r = 0; r < sh.batch * sh.seq; ++r) {
      float scale = std::pow(10.0f, exponent(rng));
      for (int64_t i = 0; i < width; ++i)
        x[r * width + i] = infir2::rt::bf16ToFloat(
            infir2::rt::floatToBF16(normal(rng) * scale));
    }
  };
  int64_t qw = sh.heads * sh.headDim, kw = sh.kvHeads * sh.headDim;
  rows(c.q, qw, -0.5f, 0.5f);
  rows(c.k, kw, -0.5f, 0.5f);
  rows(c.v, kw, -2.0f, 2.0f);
  rows(c.dout, qw, -2.0f, 2.0f);
  if (sh.packed) { // samples of 1 to 40 tokens
    c.segments.resize(sh.batch * sh.seq);
    for (int64_t b = 0, id = 0; b < sh.batch; ++b)
      for (int64_t s = 0, left = 0; s < sh.seq; ++s, --left) {
        if (left == 0) {
          left = 1 + int64_t(rng() % 40);
          ++id;
        }
        c.segments[b * sh.seq + s] = int32_t(id);
      }
  }
  return c;
}

/// How a backend computes: the relative rounding of P and of dS before
/// their products (on the tensor cores BF16's unit roundoff, 2^-8: 8
/// significant bits; the normalizer sums P unrounded, so P·V / sum is
/// within 2^-8 of Σ P_t v_t too), and the type of its results.
struct Arithmetic {
  double p, ds;
  int64_t resultType;
};
constexpr Arithmetic kFp32Arithmetic{0x1p-23, 0x1p-24, INFIR2RT_F32};

/// Per output element: the FP64 value and the bound on a backend's error.
struct Oracle {
  std::vector<double> out, dq, dk, dv;
  std::vector<double> outBound, dqBound, dkBound, dvBound;
  double loosest = 0.0; ///< the largest bound relative to its terms
};

inline Oracle attentionOracle(const AttentionCase &c, const Arithmetic &ar) {
  const AttentionShape &sh = c.shape;
  const int64_t S = sh.seq, D = sh.headDim, G = sh.heads / sh.kvHeads;
  const int64_t qw = sh.heads * D, kw = sh.kvHeads * D;
  const double u = 0x1p-24, scale = c.scale;
  const double uOut = ar.resultType == INFIR2RT_BF16 ? 0x1p-8 : 0x1p-23;
  Oracle o;
  for (auto *v : {&o.out, &o.dq, &o.outBound, &o.dqBound})
    v->assign(sh.batch * S * qw, 0.0);
  for (auto *v : {&o.dk, &o.dv, &o.dkBound, &o.dvBound})
    v->assign(sh.batch * S * kw, 0.0);
  // Sums of magnitudes behind dK and dV, bounded after the loop.
  std::vector<double> dkTerms(o.dk.size()), dvTerms(o.dv.size());
  std::vector<double> x(S), p(S), a(S), dp(S), dpAbs(S), ds(S), dsErr(S);
  auto check = [&](double bound, double terms) {
    if (terms > 0)
      o.loosest = std::max(o.loosest, bound / terms);
  };
  for (int64_t b = 0; b < sh.batch; ++b)
    for (int64_t h = 0; h < sh.heads; ++h)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t kh = h / G;
        const float *q = &c.q[(b * S + s) * qw + h * D];
        const float *g = &c.dout[(b * S + s) * qw + h * D];
        auto key = [&](const std::vector<float> &m, int64_t t) {
          return &m[(b * S + t) * kw + kh * D];
        };
        auto sees = [&](int64_t t) {
          return (!sh.causal || t <= s) &&
                 (!sh.packed ||
                  c.segments[b * S + t] == c.segments[b * S + s]);
        };
        double mx = -INFINITY;
        for (int64_t t = 0; t < S; ++t) {
          if (!sees(t))
            continue;
          double dot = 0, mag = 0;
          for (int64_t d = 0; d < D; ++d) {
            dot += double(q[d]) * key(c.k, t)[d];
            mag += std::fabs(double(q[d]) * key(c.k, t)[d]);
          }
          x[t] = scale * dot;
          a[t] = scale * mag;
          mx = std::max(mx, x[t]);
        }
        double sum = 0, xi = 0;
        for (int64_t t = 0; t < S; ++t)
          if (sees(t)) {
            sum += std::exp(x[t] - mx);
            xi = std::max(xi, D * u * a[t] + 2 * u * (std::fabs(x[t]) +
                                                      std::fabs(mx)));
          }
        const double eps = 2 * xi + 0x1p-20 + S * u;
        double delta = 0, deltaTerms = 0;
        for (int64_t t = 0; t < S; ++t) {
          p[t] = sees(t) ? std::exp(x[t] - mx) / sum : 0.0;
          dp[t] = dpAbs[t] = 0;
          for (int64_t d = 0; d < D; ++d) {
            dp[t] += double(g[d]) * key(c.v, t)[d];
            dpAbs[t] += std::fabs(double(g[d]) * key(c.v, t)[d]);
          }
          delta += p[t] * dp[t];
          deltaTerms += p[t] * dpAbs[t];
        }
        const double deltaErr = (eps + ar.p + D * u + S * u) * deltaTerms;
        for (int64_t t = 0; t < S; ++t) {
          ds[t] = p[t] * (dp[t] - delta) * scale;
          dsErr[t] = scale * p[t] *
                         (eps * std::fabs(dp[t] - delta) + D * u * dpAbs[t] +
                          deltaErr) +
                     ar.ds * std::fabs(ds[t]);
          check(dsErr[t], scale * p[t] * (dpAbs[t] + deltaTerms) + 1e-300);
        }
        const int64_t row = (b * S + s) * qw + h * D;
        for (int64_t d = 0; d < D; ++d) {
          double out = 0, outTerms = 0, dq = 0, dqErr = 0, dqTerms = 0;
          for (int64_t t = 0; t < S; ++t) {
            if (p[t] == 0.0)
              continue;
            double kv = key(c.k, t)[d], vv = key(c.v, t)[d];
            out += p[t] * vv;
            outTerms += p[t] * std::fabs(vv);
            dq += ds[t] * kv;
            dqErr += dsErr[t] * std::fabs(kv);
            dqTerms += std::fabs(ds[t] * kv);
            int64_t at = (b * S + t) * kw + kh * D + d;
            o.dk[at] += ds[t] * q[d];
            o.dkBound[at] += dsErr[t] * std::fabs(q[d]);
            dkTerms[at] += std::fabs(ds[t] * q[d]);
            o.dv[at] += p[t] * g[d];
            o.dvBound[at] += (eps + ar.p) * p[t] * std::fabs(g[d]);
            dvTerms[at] += p[t] * std::fabs(g[d]);
          }
          o.out[row + d] = out;
          o.outBound[row + d] =
              (eps + ar.p + S * u) * outTerms + uOut * std::fabs(out);
          check(o.outBound[row + d], outTerms);
          o.dq[row + d] = dq;
          o.dqBound[row + d] = dqErr + S * u * dqTerms + uOut * std::fabs(dq);
        }
      }
  for (size_t i = 0; i < o.dk.size(); ++i) {
    o.dkBound[i] += G * S * u * dkTerms[i] + uOut * std::fabs(o.dk[i]);
    o.dvBound[i] += G * S * u * dvTerms[i] + uOut * std::fabs(o.dv[i]);
    check(o.dvBound[i], dvTerms[i]);
  }
  return o;
}

/// Expects every element of `got` (FP32 or BF16 at operand `operand` of
/// `mem`) within twice its bound of the oracle; reports the worst.
inline void expectWithinBound(const char *name, const Call &c, int operand,
                              int64_t dtype, const std::vector<uint8_t> &mem,
                              const std::vector<double> &want,
                              const std::vector<double> &bound) {
  const uint8_t *p = mem.data() + c.operands[operand].first;
  int64_t bad = 0, worstAt = 0;
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    float got;
    if (dtype == INFIR2RT_F32) {
      std::memcpy(&got, p + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      got = infir2::rt::bf16ToFloat(h);
    }
    double err = std::fabs(double(got) - want[i]), allowed = 2 * bound[i];
    double ratio = err / std::max(allowed, 1e-300);
    if (!(err <= allowed)) // NaN fails too
      ++bad;
    if (!(ratio <= worst)) {
      worst = ratio;
      worstAt = int64_t(i);
    }
  }
  std::printf("  %-4s worst error %.3g of its bound (element %lld)\n", name,
              worst, (long long)worstAt);
  EXPECT_EQ(bad, 0) << name << ": elements beyond twice their bound; worst "
                    << worst << "x at element " << worstAt << " (want "
                    << want[worstAt] << ", bound " << bound[worstAt] << ")";
}

/// Runs a call's entry point on some backend and returns its operands.
using AttentionRunner = std::function<std::vector<uint8_t>(
    const Call &, int32_t (*)(infir2rt_context *, const int64_t *,
                              const char *))>;

/// attention and attention_grad of `c` through `attention` / `grad`, on
/// operands of `inputType` (results of `ar.resultType`), against the
/// oracle.
inline void checkAttention(const AttentionCase &c, int64_t inputType,
                           const Arithmetic &ar, const AttentionRunner &run,
                           int32_t (*attention)(infir2rt_context *,
                                                const int64_t *, const char *),
                           int32_t (*grad)(infir2rt_context *, const int64_t *,
                                           const char *)) {
  const AttentionShape &sh = c.shape;
  const int64_t qw = sh.heads * sh.headDim, kw = sh.kvHeads * sh.headDim;
  Oracle o = attentionOracle(c, ar);
  // A bound that is not small against its terms would pass wrong kernels.
  EXPECT_LT(o.loosest, ar.p > 1e-4 ? 0x1p-4 : 0x1p-7) << "bounds too loose";
  std::vector<double> attrs = {double(sh.heads), double(sh.kvHeads),
                               double(sh.headDim), double(c.scale),
                               sh.causal ? 1.0 : 0.0, sh.packed ? 1.0 : 0.0};
  auto put = [&](Call &call, int i, const std::vector<float> &x) {
    for (size_t j = 0; j < x.size(); ++j)
      if (inputType == INFIR2RT_F32) {
        std::memcpy(call.u8(i) + 4 * j, &x[j], 4);
      } else {
        uint16_t h = infir2::rt::floatToBF16(x[j]);
        std::memcpy(call.u8(i) + 2 * j, &h, 2);
      }
  };
  auto segments = [&](Call &call) {
    if (!sh.packed)
      return;
    int i = call.add({sh.batch, sh.seq}, INFIR2RT_I32);
    std::memcpy(call.u8(i), c.segments.data(), c.segments.size() * 4);
  };
  std::vector<int64_t> qShape = {sh.batch, sh.seq, qw},
                       kShape = {sh.batch, sh.seq, kw};
  {
    Call call;
    int q = call.add(qShape, inputType), k = call.add(kShape, inputType),
        v = call.add(kShape, inputType), out = call.add(qShape, ar.resultType);
    segments(call);
    call.attrs(attrs);
    put(call, q, c.q);
    put(call, k, c.k);
    put(call, v, c.v);
    std::memset(call.u8(out), 0xff, call.operands[out].second); // poisoned
    expectWithinBound("O", call, out, ar.resultType, run(call, attention),
                      o.out, o.outBound);
  }
  Call call;
  int q = call.add(qShape, inputType), k = call.add(kShape, inputType),
      v = call.add(kShape, inputType), g = call.add(qShape, inputType);
  int dq = call.add(qShape, ar.resultType), dk = call.add(kShape, ar.resultType),
      dv = call.add(kShape, ar.resultType);
  segments(call);
  call.attrs(attrs);
  put(call, q, c.q);
  put(call, k, c.k);
  put(call, v, c.v);
  put(call, g, c.dout);
  // Poisoned results: every element must be written.
  for (int i : {dq, dk, dv})
    std::memset(call.u8(i), 0xff, call.operands[i].second);
  std::vector<uint8_t> mem = run(call, grad);
  expectWithinBound("dQ", call, dq, ar.resultType, mem, o.dq, o.dqBound);
  expectWithinBound("dK", call, dk, ar.resultType, mem, o.dk, o.dkBound);
  expectWithinBound("dV", call, dv, ar.resultType, mem, o.dv, o.dvBound);
}

} // namespace infir2::test

#endif // INFIR2_TEST_UNIT_RUNTIME_ATTENTIONORACLE_H
