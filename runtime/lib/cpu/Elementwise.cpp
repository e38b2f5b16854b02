//===- Elementwise.cpp - Activations, norms and RoPE on the CPU -----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// add and mul (rhs broadcast over lhs's leading dimensions), silu, swiglu and
// their gradients, rms_norm and its gradient, rope: the per-element math of
// Elementwise.h, the same functions the CUDA kernels run.
//
//===----------------------------------------------------------------------===//

#include "Operand.h"

#include "infir2/runtime/Elementwise.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace infir2::rt::cpu {

namespace {

/// Elements a chunk of a per-element kernel holds: each thread widens its
/// chunk of every operand into arrays of its own (16 KiB each), so that no
/// whole FP32 copy of an operand exists (a BF16 [1024, 2816] MLP tensor
/// would be 11 MiB; swiglu_grad reads three and writes two).
constexpr int64_t kChunk = 4096;

/// `body(in, out, n)` over the chunks of `ins` (all of `numel` elements)
/// into `outs`: each chunk's inputs as FP32, its outputs written as FP32
/// and rounded once to their types. An output may be an input of the same
/// type (a chunk's elements are all read before they are written); of
/// another type it would overlap other threads' chunks.
template <int NI, int NO, typename Body>
void chunked(const Operand (&ins)[NI], const Operand (&outs)[NO], int64_t numel,
             Body body) {
#pragma omp parallel for schedule(static) if (numel > 65536)
  for (int64_t begin = 0; begin < numel; begin += kChunk) {
    int64_t n = std::min(kChunk, numel - begin);
    float inBuf[NI][kChunk], outBuf[NO][kChunk];
    const float *in[NI];
    float *out[NO];
    for (int k = 0; k < NI; ++k)
      in[k] = ins[k].floats(begin, n, inBuf[k]);
    for (int k = 0; k < NO; ++k)
      out[k] = outs[k].output(begin, outBuf[k]);
    body(in, out, n);
    for (int k = 0; k < NO; ++k)
      outs[k].store(begin, n, out[k]);
  }
}

/// out = fn(inputs...) element by element, operands 0..NI-1 in, NI out.
template <int NI, typename Fn> int32_t elementwise(const Call &c, Fn fn) {
  Operand ins[NI];
  for (int k = 0; k < NI; ++k)
    ins[k] = c.operand(k);
  Operand outs[1] = {c.operand(NI)};
  chunked(ins, outs, outs[0].numel,
          [&](const float *const *in, float *const *out, int64_t n) {
            for (int64_t i = 0; i < n; ++i)
              out[0][i] = fn(in, i);
          });
  return 0;
}

inline float widen(float v) { return v; }
inline float widen(uint16_t v) { return bf16ToFloat(v); }
inline void narrow(float &out, float v) { out = v; }
inline void narrow(uint16_t &out, float v) { out = floatToBF16(v); }

/// o = fn(a, b) with b repeated over `rows` rows of n elements, each operand
/// FP32 or BF16 as stored: no widened copies, no division per element.
template <typename A, typename B, typename O, typename Fn>
void broadcastRows(const A *a, const B *b, O *o, int64_t rows, int64_t n,
                   Fn fn) {
#pragma omp parallel for if (rows * n > 65536 && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    const A *ar = a + r * n;
    O *orow = o + r * n;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j)
      narrow(orow[j], fn(widen(ar[j]), widen(b[j])));
  }
}

/// The same over one row, split across the threads.
template <typename A, typename B, typename O, typename Fn>
void elementwiseRow(const A *a, const B *b, O *o, int64_t n, Fn fn) {
#pragma omp parallel for simd if (n > 65536)
  for (int64_t j = 0; j < n; ++j)
    narrow(o[j], fn(widen(a[j]), widen(b[j])));
}

template <typename A, typename B, typename O, typename Fn>
void broadcastTyped(const Operand &lhs, const Operand &rhs, const Operand &out,
                    Fn fn) {
  const A *a = reinterpret_cast<const A *>(lhs.ptr);
  const B *b = reinterpret_cast<const B *>(rhs.ptr);
  O *o = reinterpret_cast<O *>(out.ptr);
  int64_t n = rhs.numel, rows = out.numel / n;
  if (rows == 1)
    elementwiseRow(a, b, o, n, fn);
  else
    broadcastRows(a, b, o, rows, n, fn);
}

/// out = fn(lhs, rhs) with rhs repeated over lhs's leading dimensions (its
/// shape a suffix of lhs's). FP32 and BF16 operands and results are read
/// and written as stored; other types go through FP32 copies.
template <typename Fn> int32_t broadcasting(const Call &c, Fn fn) {
  Operand lhs = c.operand(0), rhs = c.operand(1), out = c.operand(2);
  auto typed = [](int64_t t) {
    return t == INFIR2RT_F32 || t == INFIR2RT_BF16;
  };
  if (typed(lhs.dtype) && typed(rhs.dtype) && typed(out.dtype)) {
    bool a16 = lhs.dtype == INFIR2RT_BF16, b16 = rhs.dtype == INFIR2RT_BF16,
         o16 = out.dtype == INFIR2RT_BF16;
    using F = float;
    using H = uint16_t;
    int which = (a16 ? 4 : 0) | (b16 ? 2 : 0) | (o16 ? 1 : 0);
    switch (which) {
    case 0: broadcastTyped<F, F, F>(lhs, rhs, out, fn); break;
    case 1: broadcastTyped<F, F, H>(lhs, rhs, out, fn); break;
    case 2: broadcastTyped<F, H, F>(lhs, rhs, out, fn); break;
    case 3: broadcastTyped<F, H, H>(lhs, rhs, out, fn); break;
    case 4: broadcastTyped<H, F, F>(lhs, rhs, out, fn); break;
    case 5: broadcastTyped<H, F, H>(lhs, rhs, out, fn); break;
    case 6: broadcastTyped<H, H, F>(lhs, rhs, out, fn); break;
    default: broadcastTyped<H, H, H>(lhs, rhs, out, fn); break;
    }
    return 0;
  }
  Buffer bl, br, bo;
  const float *A = lhs.floats(bl), *B = rhs.floats(br);
  float *O = out.output(bo);
  int64_t n = rhs.numel, rows = out.numel / n;
  broadcastRows(A, B, O, rows, n, fn);
  out.store(O);
  return 0;
}

} // namespace

int32_t silu(const Call &c) {
  return elementwise<1>(
      c, [](const float *const *in, int64_t i) { return siluOf(in[0][i]); });
}

int32_t swiglu(const Call &c) {
  return elementwise<2>(c, [](const float *const *in, int64_t i) {
    return swigluOf(in[0][i], in[1][i]);
  });
}

int32_t add(const Call &c) {
  return broadcasting(c, [](float a, float b) { return a + b; });
}

int32_t mul(const Call &c) {
  return broadcasting(c, [](float a, float b) { return a * b; });
}

int32_t silu_grad(const Call &c) {
  return elementwise<2>(c, [](const float *const *in, int64_t i) {
    return siluGradOf(in[0][i], in[1][i]);
  });
}

int32_t swiglu_grad(const Call &c) {
  Operand ins[3] = {c.operand(0), c.operand(1), c.operand(2)};
  Operand outs[2] = {c.operand(3), c.operand(4)};
  chunked(ins, outs, ins[0].numel,
          [](const float *const *in, float *const *out, int64_t n) {
            for (int64_t i = 0; i < n; ++i)
              swigluGradOf(in[0][i], in[1][i], in[2][i], out[0][i], out[1][i]);
          });
  return 0;
}

int32_t rms_norm(const Call &c) {
  Operand x = c.operand(0), w = c.operand(1), out = c.operand(2);
  float eps = float(c.attrs<attrs::rms_norm>().epsilon);
  int64_t d = x.last(), rows = x.rows();
  Buffer bx, bw, bo;
  const float *X = x.floats(bx), *W = w.floats(bw);
  float *O = out.output(bo);
#pragma omp parallel for
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = X + r * d;
    float ss = 0.0f;
    for (int64_t i = 0; i < d; ++i)
      ss += row[i] * row[i];
    float inv = rmsNormScaleOf(ss, d, eps);
    for (int64_t i = 0; i < d; ++i)
      O[r * d + i] = row[i] * inv * W[i];
  }
  out.store(O);
  return 0;
}

int32_t rms_norm_grad(const Call &c) {
  Operand x = c.operand(0), w = c.operand(1), dy = c.operand(2),
          dx = c.operand(3), dw = c.operand(4);
  auto a = c.attrs<attrs::rms_norm_grad>();
  float eps = float(a.epsilon);
  int64_t d = x.last(), rows = x.rows();
  Buffer bx, bw, bd, bdx, bdw;
  const float *X = x.floats(bx), *W = w.floats(bw), *D = dy.floats(bd);
  float *DX = dx.output(bdx), *DW = dw.output(bdw);
  std::vector<double> dwAcc; // from the accumulator, when there is one
  if (int32_t rc = startSums(c, a.has_acc, 5, dw, dwAcc))
    return rc;
  // The residual added into dx (it may be dx itself: each element is read
  // before it is written).
  Buffer bres;
  const float *R = nullptr;
  if (a.has_residual) {
    Operand res = c.operand(a.has_acc ? 6 : 5);
    if (res.dtype != dx.dtype || res.numel != dx.numel)
      return c.fail("%s", "a residual adds into an input gradient of its "
                          "type and size");
    R = res.floats(bres);
  }
#pragma omp parallel
  {
    std::vector<double> local(d, 0.0);
#pragma omp for
    for (int64_t r = 0; r < rows; ++r) {
      const float *xr = X + r * d, *gr = D + r * d;
      float ss = 0.0f, dot = 0.0f;
      for (int64_t i = 0; i < d; ++i) {
        ss += xr[i] * xr[i];
        dot += W[i] * gr[i] * xr[i];
      }
      float inv = 1.0f / std::sqrt(ss / d + eps);
      for (int64_t i = 0; i < d; ++i) {
        local[i] += double(gr[i] * xr[i] * inv);
        float g = inv * W[i] * gr[i] - inv * inv * inv / d * xr[i] * dot;
        DX[r * d + i] = R ? R[r * d + i] + g : g;
      }
    }
#pragma omp critical
    for (int64_t i = 0; i < d; ++i)
      dwAcc[i] += local[i];
  }
  for (int64_t i = 0; i < d; ++i)
    DW[i] = float(dwAcc[i]);
  dx.store(DX);
  dw.store(DW);
  return 0;
}

int32_t rope(const Call &c) {
  auto a = c.attrs<attrs::rope>();
  int64_t hd = a.head_dim, half = hd / 2;
  double theta = a.theta, sign = a.direction;
  // One or more tensors (q and k), three operands each. The angles' cosines
  // and sines are computed once for the tensors that share positions.
  std::vector<float> cs, sn;
  struct Key {
    const uint8_t *pos = nullptr;
    int64_t tokens = -1, seq = -1;
    bool operator==(const Key &o) const {
      return pos == o.pos && tokens == o.tokens && seq == o.seq;
    }
  } table;
  for (int64_t g = 0; g + 3 <= c.numOperands(); g += 3) {
    Operand x = c.operand(g), pos = c.operand(g + 1), out = c.operand(g + 2);
    int64_t width = x.last(), seq = x.dim(-2), heads = width / hd;
    int64_t tokens = x.rows();
    bool shared = pos.rank == 1;
    Key key{pos.ptr, tokens, shared ? seq : 0};
    if (!(key == table)) {
      table = key;
      cs.resize(tokens * half);
      sn.resize(tokens * half);
#pragma omp parallel for
      for (int64_t t = 0; t < tokens; ++t) {
        double p = double(pos.getIndex(shared ? t % seq : t));
        for (int64_t i = 0; i < half; ++i) {
          // The angle in FP64, as the frequencies span many magnitudes.
          double angle =
              sign * p * std::pow(theta, -2.0 * double(i) / double(hd));
          cs[t * half + i] = float(std::cos(angle));
          sn[t * half + i] = float(std::sin(angle));
        }
      }
    }
    Buffer bx, bo;
    const float *X = x.floats(bx);
    float *O = out.output(bo);
#pragma omp parallel for
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t h = 0; h < heads; ++h) {
        const float *in = X + t * width + h * hd;
        float *o = O + t * width + h * hd;
        for (int64_t i = 0; i < half; ++i) {
          float cv = cs[t * half + i], sv = sn[t * half + i];
          o[i] = in[i] * cv - in[i + half] * sv;
          o[i + half] = in[i + half] * cv + in[i] * sv;
        }
      }
    out.store(O);
  }
  return 0;
}

} // namespace infir2::rt::cpu
