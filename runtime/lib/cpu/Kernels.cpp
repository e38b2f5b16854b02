//===- Kernels.cpp - The CPU backend of the InfiR2 runtime ----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Every entry point of ABI.def on the CPU. Kernels read their operands as
// FP32 (BF16 and FP8 widen exactly), compute in FP32 (FP64 for the few
// reductions whose order would otherwise show, noted where), and round once
// to the result's element type, so a BF16 tensor really holds BF16 values.
// GEMMs go through BLAS (cblas_sgemm) with FP32 accumulation; FP8 GEMMs on
// exactly dequantized operands. Loops over rows, heads and elements use
// OpenMP.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Collectives.h"
#include "infir2/runtime/Descriptor.h"
#include "infir2/runtime/Elementwise.h"
#include "infir2/runtime/FP8.h"
#include "infir2/runtime/Float.h"
#include "infir2/runtime/Optimizer.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

using namespace infir2::rt;

namespace {

//===----------------------------------------------------------------------===//
// Operands
//===----------------------------------------------------------------------===//

/// A descriptor operand with element access in any storage type.
struct Operand : DescOperand {

  float get(int64_t i) const {
    switch (dtype) {
    case INFIR2RT_F32:
      return reinterpret_cast<const float *>(ptr)[i];
    case INFIR2RT_BF16:
      return bf16ToFloat(reinterpret_cast<const uint16_t *>(ptr)[i]);
    case INFIR2RT_F16:
      return halfToFloat(reinterpret_cast<const uint16_t *>(ptr)[i]);
    case INFIR2RT_F64:
      return float(reinterpret_cast<const double *>(ptr)[i]);
    case INFIR2RT_E4M3:
      return e4m3ToFloat(ptr[i]);
    case INFIR2RT_E5M2:
      return e5m2ToFloat(ptr[i]);
    case INFIR2RT_E8M0:
      return e8m0ToFloat(ptr[i]);
    case INFIR2RT_I32:
      return float(reinterpret_cast<const int32_t *>(ptr)[i]);
    case INFIR2RT_I64:
      return float(reinterpret_cast<const int64_t *>(ptr)[i]);
    default:
      return ptr[i] ? 1.0f : 0.0f;
    }
  }

  int64_t getIndex(int64_t i) const {
    if (dtype == INFIR2RT_I64)
      return reinterpret_cast<const int64_t *>(ptr)[i];
    return reinterpret_cast<const int32_t *>(ptr)[i];
  }

  void set(int64_t i, float v) const {
    switch (dtype) {
    case INFIR2RT_F32:
      reinterpret_cast<float *>(ptr)[i] = v;
      break;
    case INFIR2RT_BF16:
      reinterpret_cast<uint16_t *>(ptr)[i] = floatToBF16(v);
      break;
    case INFIR2RT_F16:
      reinterpret_cast<uint16_t *>(ptr)[i] = floatToHalf(v);
      break;
    case INFIR2RT_F64:
      reinterpret_cast<double *>(ptr)[i] = v;
      break;
    case INFIR2RT_E4M3:
      ptr[i] = floatToE4M3(v);
      break;
    case INFIR2RT_E5M2:
      ptr[i] = floatToE5M2(v);
      break;
    case INFIR2RT_E8M0:
      ptr[i] = floatToE8M0(v);
      break;
    case INFIR2RT_I32:
      reinterpret_cast<int32_t *>(ptr)[i] = int32_t(v);
      break;
    case INFIR2RT_I64:
      reinterpret_cast<int64_t *>(ptr)[i] = int64_t(v);
      break;
    default:
      ptr[i] = v != 0.0f;
    }
  }

  /// The operand as FP32: the storage itself when it is FP32, else a copy.
  const float *floats(std::vector<float> &buffer) const {
    if (dtype == INFIR2RT_F32)
      return reinterpret_cast<const float *>(ptr);
    buffer.resize(numel);
    float *out = buffer.data();
    if (dtype == INFIR2RT_BF16) { // the common case, kept branch-free
      const uint16_t *in = reinterpret_cast<const uint16_t *>(ptr);
#pragma omp parallel for if (numel > 65536)
      for (int64_t i = 0; i < numel; ++i)
        out[i] = bf16ToFloat(in[i]);
      return out;
    }
#pragma omp parallel for if (numel > 65536)
    for (int64_t i = 0; i < numel; ++i)
      out[i] = get(i);
    return out;
  }

  /// A place to write FP32 results: the storage itself when it is FP32,
  /// else `buffer` (then call store()). Zeroed only when `zero` is set, for
  /// kernels that accumulate into their output.
  float *output(std::vector<float> &buffer, bool zero = false) const {
    if (dtype == INFIR2RT_F32) {
      if (zero)
        std::memset(ptr, 0, numel * sizeof(float));
      return reinterpret_cast<float *>(ptr);
    }
    buffer.assign(numel, 0.0f);
    return buffer.data();
  }

  /// Rounds `values` (from output()) into the storage.
  void store(const float *values) const {
    if (dtype == INFIR2RT_F32)
      return;
    if (dtype == INFIR2RT_BF16) {
      uint16_t *out = reinterpret_cast<uint16_t *>(ptr);
#pragma omp parallel for if (numel > 65536)
      for (int64_t i = 0; i < numel; ++i)
        out[i] = floatToBF16(values[i]);
      return;
    }
#pragma omp parallel for if (numel > 65536)
    for (int64_t i = 0; i < numel; ++i)
      set(i, values[i]);
  }
};

/// One call: its operands and attributes, decoded from the descriptor.
struct Call {
  infir2rt_context *ctx;
  const int64_t *desc;
  const char *where;

  int64_t numOperands() const { return descOperandCount(desc); }
  int64_t numAttrs() const { return descAttrCount(desc); }
  Operand operand(int64_t i) const { return {descOperand(ctx, desc, i)}; }
  double attr(int64_t i) const { return descAttr(desc, i); }
  int64_t intAttr(int64_t i) const { return int64_t(attr(i)); }

  int32_t fail(const char *fmt, ...) const
      __attribute__((format(printf, 2, 3))) {
    va_list args;
    va_start(args, fmt);
    descFailV(ctx, where, fmt, args);
    va_end(args);
    return 1;
  }
};

/// C[m, n] = op(A)·op(B) for row-major FP32 matrices (leading dimensions
/// lda, ldb, ldc), split by rows of C across the OpenMP threads. OpenBLAS
/// itself runs single-threaded (see the constructor below): one thread pool,
/// instead of OpenMP's and OpenBLAS's spinning against each other on the
/// same cores.
void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
           int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc) {
  int threads = omp_get_max_threads();
  int64_t chunk = std::max<int64_t>(16, (m + threads - 1) / threads);
  int64_t parts = (m + chunk - 1) / chunk;
#pragma omp parallel for if (parts > 1 && m * n * k > (1 << 18))
  for (int64_t part = 0; part < parts; ++part) {
    int64_t m0 = part * chunk, rows = std::min(chunk, m - m0);
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, rows, n, k, 1.0f,
                a + (ta ? m0 : m0 * lda), lda, b, ldb, 0.0f, c + m0 * ldc, ldc);
  }
}

void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
           const float *b, float *c) {
  sgemm(ta, tb, m, n, k, a, ta ? m : k, b, tb ? k : n, c, n);
}

struct SingleThreadedBlas {
  SingleThreadedBlas() { openblas_set_num_threads(1); }
} singleThreadedBlas;

/// Where the scale of each element of a tensor quantized in blocks of
/// `block` is. The tensor is seen as rows of its last dimension; blocks span
/// `br` rows of the second-to-last dimension and `bc` columns, and the
/// leading dimensions either all have block 1 or are all covered by one
/// block (tensorwise): then the scale index is linear in c / bc along a row
/// ("fast"). Other mixes take the general path.
struct Blocks {
  const int64_t *shape, *block;
  int64_t rank, R, C, br, bc;
  bool leadOne = true, leadAll = true;

  Blocks(const Operand &x, const int64_t *b)
      : shape(x.shape), block(b), rank(x.rank) {
    C = x.last();
    bc = block[rank - 1];
    R = rank >= 2 ? shape[rank - 2] : 1;
    br = rank >= 2 ? block[rank - 2] : 1;
    for (int64_t i = 0; i + 2 < rank; ++i) {
      leadOne &= block[i] == 1;
      leadAll &= block[i] == shape[i];
    }
  }
  bool fast() const { return leadOne || leadAll; }
  /// The scale index of element (row q, column 0); fast geometry only.
  int64_t rowBase(int64_t q) const {
    int64_t p = leadOne ? q / R : 0, r = q % R;
    return (p * (R / br) + r / br) * (C / bc);
  }
  /// The scale index of element (row q, column c), any geometry.
  int64_t index(int64_t q, int64_t c) const {
    if (fast())
      return rowBase(q) + c / bc;
    int64_t s = 0, stride = 1, rest = q;
    for (int64_t i = rank - 1; i >= 0; --i) {
      int64_t idx = i == rank - 1 ? c : rest % shape[i];
      if (i != rank - 1)
        rest /= shape[i];
      s += (idx / block[i]) * stride;
      stride *= shape[i] / block[i];
    }
    return s;
  }
};

/// Calls fn(element index, scale index) for every element of rows [q0, q1).
template <typename Fn>
void forEachBlocked(const Blocks &g, int64_t q0, int64_t q1, Fn fn) {
  for (int64_t q = q0; q < q1; ++q) {
    if (g.fast()) {
      int64_t base = g.rowBase(q);
      for (int64_t cb = 0, ncb = g.C / g.bc; cb < ncb; ++cb)
        for (int64_t c = cb * g.bc, e = c + g.bc; c < e; ++c)
          fn(q * g.C + c, base + cb);
    } else {
      for (int64_t c = 0; c < g.C; ++c)
        fn(q * g.C + c, g.index(q, c));
    }
  }
}

float nanMax(float a, float b) {
  return (std::isnan(a) || std::isnan(b))
             ? std::numeric_limits<float>::quiet_NaN()
             : std::max(a, b);
}

/// The largest magnitude of n floats, or NaN if any is not finite. Eight
/// independent lanes, so that the compiler vectorizes it.
float blockAbsMax(const float *x, int64_t n) {
  float m[8] = {}, poison[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) {
      float a = std::fabs(x[i + l]);
      m[l] = a > m[l] ? a : m[l];
      poison[l] += x[i + l] * 0.0f; // NaN for NaN or ±inf
    }
  float r = 0.0f, p = 0.0f;
  for (; i < n; ++i) {
    r = std::max(r, std::fabs(x[i]));
    p += x[i] * 0.0f;
  }
  for (int l = 0; l < 8; ++l) {
    r = std::max(r, m[l]);
    p += poison[l];
  }
  return p == 0.0f ? r : std::numeric_limits<float>::quiet_NaN();
}

/// Quantizes the FP32 values `x` (numel of `data`) into `data` and `scale`.
int32_t quantizeInto(const Call &c, const float *x, const Operand &data,
                     const Operand &scale, FP8Format format, bool pow2,
                     const int64_t *block) {
  Blocks g(data, block);
  int64_t rows = data.numel / g.C;
  std::vector<float> amax(scale.numel, 0.0f);
#pragma omp parallel if (data.numel > 65536)
  {
    std::vector<float> local(scale.numel, 0.0f);
#pragma omp for
    for (int64_t q = 0; q < rows; ++q) {
      if (!g.fast()) {
        forEachBlocked(g, q, q + 1, [&](int64_t i, int64_t b) {
          local[b] = nanMax(local[b], std::fabs(x[i]));
        });
        continue;
      }
      int64_t base = g.rowBase(q);
      for (int64_t cb = 0, ncb = g.C / g.bc; cb < ncb; ++cb) {
        const float *chunk = x + q * g.C + cb * g.bc;
        float m = blockAbsMax(chunk, g.bc);
        if (std::isnan(m)) { // a non-finite value: NaN, or else inf
          m = 0.0f;
          for (int64_t c = 0; c < g.bc; ++c)
            m = nanMax(m, std::fabs(chunk[c]));
        }
        local[base + cb] = nanMax(local[base + cb], m);
      }
    }
#pragma omp critical
    for (int64_t b = 0; b < scale.numel; ++b)
      amax[b] = nanMax(amax[b], local[b]);
  }
  std::vector<float> s(scale.numel);
  for (int64_t b = 0; b < scale.numel; ++b) {
    if (!std::isfinite(amax[b]))
      return c.fail("non-finite amax (%s) in scale block %lld: refusing to "
                    "quantize it",
                    std::isnan(amax[b]) ? "nan" : "inf", (long long)b);
    s[b] = fp8Scale(amax[b], format, pow2);
    scale.set(b, s[b]);
  }
  // x / s: for a power-of-two scale (>= 2^-57, kAmaxFloor / 57344) the
  // reciprocal is exact, so multiplying by it is the same rounding.
  std::vector<float> inv(scale.numel);
  for (int64_t b = 0; b < scale.numel; ++b)
    inv[b] = 1.0f / s[b];
  if (pow2) {
#pragma omp parallel for if (data.numel > 65536)
    for (int64_t q = 0; q < rows; ++q)
      forEachBlocked(g, q, q + 1, [&](int64_t i, int64_t b) {
        data.ptr[i] = floatToFP8(x[i] * inv[b], format);
      });
    return 0;
  }
#pragma omp parallel for if (data.numel > 65536)
  for (int64_t q = 0; q < rows; ++q)
    forEachBlocked(g, q, q + 1, [&](int64_t i, int64_t b) {
      data.ptr[i] = floatToFP8(x[i] / s[b], format);
    });
  return 0;
}

/// The FP32 values data·scale of a quantized operand (exact under pow2
/// scales).
std::vector<float> dequantized(const Operand &data, const Operand &scale,
                               const int64_t *block) {
  Blocks g(data, block);
  int64_t rows = data.numel / g.C;
  std::vector<float> s(scale.numel), out(data.numel);
  for (int64_t b = 0; b < scale.numel; ++b)
    s[b] = scale.get(b);
  FP8Format format =
      data.dtype == INFIR2RT_E5M2 ? FP8Format::E5M2 : FP8Format::E4M3;
#pragma omp parallel for if (data.numel > 65536)
  for (int64_t q = 0; q < rows; ++q)
    forEachBlocked(g, q, q + 1, [&](int64_t i, int64_t b) {
      out[i] = fp8ToFloat(data.ptr[i], format) * s[b];
    });
  return out;
}

/// The geometry of attention and its gradient.
struct Attention {
  int64_t batch, sq, skv, heads, group, hd, qw, kw;
  float scale;
  bool causal;

  explicit Attention(const Call &c) {
    Operand q = c.operand(0), k = c.operand(1);
    heads = c.intAttr(0);
    group = heads / c.intAttr(1);
    hd = c.intAttr(2);
    scale = float(c.attr(3));
    causal = c.attr(4) != 0.0;
    batch = q.dim(0);
    sq = q.dim(1);
    skv = k.dim(1);
    qw = heads * hd;
    kw = (heads / group) * hd;
  }

  /// The softmax probabilities of query (b, h, s) over the keys it sees.
  int64_t probabilities(const float *q, const float *k, int64_t b, int64_t h,
                        int64_t s, float *p) const {
    const float *qv = q + (b * sq + s) * qw + h * hd;
    int64_t visible = causal ? s + 1 : skv;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t t = 0; t < visible; ++t) {
      const float *kv = k + (b * skv + t) * kw + (h / group) * hd;
      float dot = 0.0f;
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

/// Per-token loss weight (mask, 0 for the ignore index) of a cross-entropy.
struct TokenWeights {
  std::vector<float> w;
  double total = 0.0;
};

int32_t tokenWeights(const Call &c, const Operand &targets, bool hasMask,
                     int64_t vocab, TokenWeights &out) {
  int64_t ignore = c.intAttr(0);
  Operand mask = hasMask ? c.operand(2) : Operand{};
  out.w.resize(targets.numel);
  for (int64_t t = 0; t < targets.numel; ++t) {
    int64_t id = targets.getIndex(t);
    float w = id == ignore ? 0.0f : (hasMask ? mask.get(t) : 1.0f);
    if (w != 0.0f && (id < 0 || id >= vocab))
      return c.fail("target %lld at position %lld is out of range [0, %lld)",
                    (long long)id, (long long)t, (long long)vocab);
    out.w[t] = w;
    out.total += w;
  }
  return 0;
}

float logSumExp(const float *row, int64_t n) {
  float mx = *std::max_element(row, row + n);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += std::exp(double(row[i] - mx));
  return mx + float(std::log(sum));
}

template <typename Fn>
int32_t elementwise(const Call &c, int64_t inputs, Fn fn) {
  Operand out = c.operand(inputs);
  std::vector<float> b0, b1, b2, bo;
  const float *in[3] = {};
  int64_t n[3] = {};
  std::vector<float> *bufs[3] = {&b0, &b1, &b2};
  for (int64_t i = 0; i < inputs; ++i) {
    Operand o = c.operand(i);
    in[i] = o.floats(*bufs[i]);
    n[i] = o.numel;
  }
  float *o = out.output(bo);
#pragma omp parallel for if (out.numel > 65536)
  for (int64_t i = 0; i < out.numel; ++i)
    o[i] = fn(in, n, i);
  out.store(o);
  return 0;
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

// Each entry point runs on the CPU, or forwards to the context's device
// backend when the regions live there.
#define ENTRY(name)                                                            \
  static int32_t name##Impl(const Call &c);                                    \
  extern "C" int32_t infir2rt_##name(infir2rt_context *ctx,                    \
                                     const int64_t *desc, const char *where) { \
    if (ctx->device)                                                           \
      return ctx->device[INFIR2RT_ENTRY_##name](ctx, desc, where);             \
    return name##Impl(Call{ctx, desc, where});                                 \
  }                                                                            \
  static int32_t name##Impl(const Call &c)

ENTRY(copy) {
  Operand in = c.operand(0), out = c.operand(1);
  if (in.dtype == out.dtype) {
    std::memmove(out.ptr, in.ptr, in.numel * infir2rt_dtype_size(in.dtype));
    return 0;
  }
#pragma omp parallel for if (in.numel > 65536)
  for (int64_t i = 0; i < in.numel; ++i)
    out.set(i, in.get(i));
  return 0;
}

ENTRY(fill) {
  Operand out = c.operand(0);
  float v = float(c.attr(0));
  for (int64_t i = 0; i < out.numel; ++i)
    out.set(i, v);
  return 0;
}

ENTRY(transpose) {
  Operand in = c.operand(0), out = c.operand(1);
  int64_t rank = in.rank;
  std::vector<int64_t> inStride(rank, 1), idx(rank, 0);
  for (int64_t i = rank - 2; i >= 0; --i)
    inStride[i] = inStride[i + 1] * in.shape[i + 1];
  int64_t size = infir2rt_dtype_size(in.dtype);
  for (int64_t flat = 0; flat < out.numel; ++flat) {
    int64_t src = 0;
    for (int64_t i = 0; i < rank; ++i)
      src += idx[i] * inStride[c.intAttr(i)];
    std::memcpy(out.ptr + flat * size, in.ptr + src * size, size);
    for (int64_t i = rank - 1; i >= 0; --i) {
      if (++idx[i] < out.shape[i])
        break;
      idx[i] = 0;
    }
  }
  return 0;
}

ENTRY(embedding) {
  Operand table = c.operand(0), ids = c.operand(1), out = c.operand(2);
  int64_t vocab = table.dim(0), dim = table.dim(1);
  int64_t size = infir2rt_dtype_size(table.dtype);
  for (int64_t t = 0; t < ids.numel; ++t) {
    int64_t id = ids.getIndex(t);
    if (id < 0 || id >= vocab)
      return c.fail("token id %lld at position %lld is out of range [0, %lld)",
                    (long long)id, (long long)t, (long long)vocab);
    if (table.dtype == out.dtype)
      std::memcpy(out.ptr + t * dim * size, table.ptr + id * dim * size,
                  dim * size);
    else
      for (int64_t i = 0; i < dim; ++i)
        out.set(t * dim + i, table.get(id * dim + i));
  }
  return 0;
}

ENTRY(matmul) {
  Operand a = c.operand(0), b = c.operand(1), out = c.operand(2);
  bool ta = c.attr(0) != 0.0, tb = c.attr(1) != 0.0;
  int64_t m = a.dim(ta ? -1 : -2), k = a.dim(ta ? -2 : -1);
  int64_t n = b.dim(tb ? -2 : -1);
  int64_t batch = a.numel / (m * k);
  bool sharedRhs = b.rank == 2;
  std::vector<float> ba, bb, bo;
  const float *A = a.floats(ba), *B = b.floats(bb);
  float *C = out.output(bo);
  if (sharedRhs && !ta) {
    sgemm(false, tb, batch * m, n, k, A, B, C); // one GEMM over all rows
  } else {
    for (int64_t p = 0; p < batch; ++p)
      sgemm(ta, tb, m, n, k, A + p * m * k, B + (sharedRhs ? 0 : p * k * n),
            C + p * m * n);
  }
  out.store(C);
  return 0;
}

ENTRY(rms_norm) {
  Operand x = c.operand(0), w = c.operand(1), out = c.operand(2);
  float eps = float(c.attr(0));
  int64_t d = x.last(), rows = x.rows();
  std::vector<float> bx, bw, bo;
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

ENTRY(rope) {
  Operand x = c.operand(0), pos = c.operand(1), out = c.operand(2);
  int64_t hd = c.intAttr(0), half = hd / 2;
  double theta = c.attr(1), sign = c.attr(2);
  int64_t width = x.last(), seq = x.dim(-2), heads = width / hd;
  int64_t tokens = x.rows();
  bool shared = pos.rank == 1;
  std::vector<float> bx, bo;
  const float *X = x.floats(bx);
  float *O = out.output(bo);
#pragma omp parallel for
  for (int64_t t = 0; t < tokens; ++t) {
    double p = double(pos.getIndex(shared ? t % seq : t));
    for (int64_t i = 0; i < half; ++i) {
      // The angle in FP64, as the frequencies span many magnitudes.
      double angle = sign * p * std::pow(theta, -2.0 * double(i) / double(hd));
      float cs = float(std::cos(angle)), sn = float(std::sin(angle));
      for (int64_t h = 0; h < heads; ++h) {
        const float *in = X + t * width + h * hd;
        float *o = O + t * width + h * hd;
        o[i] = in[i] * cs - in[i + half] * sn;
        o[i + half] = in[i + half] * cs + in[i] * sn;
      }
    }
  }
  out.store(O);
  return 0;
}

ENTRY(attention) {
  Attention a(c);
  Operand q = c.operand(0), k = c.operand(1), v = c.operand(2),
          out = c.operand(3);
  std::vector<float> bq, bk, bv, bo;
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
            for (int64_t i = 0; i < a.hd; ++i)
              o[i] += p[t] * vv[i];
          }
        }
  }
  out.store(O);
  return 0;
}

ENTRY(silu) {
  return elementwise(c, 1, [](const float **in, const int64_t *, int64_t i) {
    return siluOf(in[0][i]);
  });
}

ENTRY(swiglu) {
  return elementwise(c, 2, [](const float **in, const int64_t *, int64_t i) {
    return swigluOf(in[0][i], in[1][i]);
  });
}

ENTRY(add) {
  return elementwise(c, 2, [](const float **in, const int64_t *n, int64_t i) {
    return in[0][i] + in[1][i % n[1]];
  });
}

ENTRY(mul) {
  return elementwise(c, 2, [](const float **in, const int64_t *n, int64_t i) {
    return in[0][i] * in[1][i % n[1]];
  });
}

ENTRY(cross_entropy) {
  Operand logits = c.operand(0), targets = c.operand(1);
  bool hasMask = c.attr(1) != 0.0;
  Operand out = c.operand(hasMask ? 3 : 2);
  int64_t vocab = logits.last();
  TokenWeights w;
  if (int32_t err = tokenWeights(c, targets, hasMask, vocab, w))
    return err;
  std::vector<float> bl;
  const float *L = logits.floats(bl);
  double total = 0.0; // FP64 sum over tokens: order-independent enough
#pragma omp parallel for reduction(+ : total)
  for (int64_t t = 0; t < targets.numel; ++t) {
    if (w.w[t] == 0.0f)
      continue;
    const float *row = L + t * vocab;
    total += double(w.w[t]) *
             double(logSumExp(row, vocab) - row[targets.getIndex(t)]);
  }
  out.set(0, w.total == 0.0 ? 0.0f : float(total / w.total));
  return 0;
}

ENTRY(reduce_sum) {
  Operand x = c.operand(0), out = c.operand(1);
  std::vector<float> bx;
  const float *X = x.floats(bx);
  int64_t n = out.numel, rows = x.numel / n;
  std::vector<double> acc(n, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i)
      acc[i] += X[r * n + i];
  for (int64_t i = 0; i < n; ++i)
    out.set(i, float(acc[i]));
  return 0;
}

ENTRY(silu_grad) {
  return elementwise(c, 2, [](const float **in, const int64_t *, int64_t i) {
    return siluGradOf(in[0][i], in[1][i]);
  });
}

ENTRY(swiglu_grad) {
  Operand g = c.operand(0), u = c.operand(1), dy = c.operand(2),
          dg = c.operand(3), du = c.operand(4);
  std::vector<float> bg, bu, bd, bdg, bdu;
  const float *G = g.floats(bg), *U = u.floats(bu), *D = dy.floats(bd);
  float *DG = dg.output(bdg), *DU = du.output(bdu);
#pragma omp parallel for
  for (int64_t i = 0; i < g.numel; ++i) {
    swigluGradOf(G[i], U[i], D[i], DG[i], DU[i]);
  }
  dg.store(DG);
  du.store(DU);
  return 0;
}

ENTRY(rms_norm_grad) {
  Operand x = c.operand(0), w = c.operand(1), dy = c.operand(2),
          dx = c.operand(3), dw = c.operand(4);
  float eps = float(c.attr(0));
  int64_t d = x.last(), rows = x.rows();
  std::vector<float> bx, bw, bd, bdx, bdw;
  const float *X = x.floats(bx), *W = w.floats(bw), *D = dy.floats(bd);
  float *DX = dx.output(bdx), *DW = dw.output(bdw);
  std::vector<double> dwAcc(d, 0.0);
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
        DX[r * d + i] = inv * W[i] * gr[i] - inv * inv * inv / d * xr[i] * dot;
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

ENTRY(attention_grad) {
  Attention a(c);
  Operand q = c.operand(0), k = c.operand(1), v = c.operand(2),
          dout = c.operand(3), dq = c.operand(4), dk = c.operand(5),
          dv = c.operand(6);
  std::vector<float> bq, bk, bv, bo, bdq, bdk, bdv;
  const float *Q = q.floats(bq), *K = k.floats(bk), *V = v.floats(bv),
              *GO = dout.floats(bo);
  float *DQ = dq.output(bdq, true), *DK = dk.output(bdk, true),
        *DV = dv.output(bdv, true);
  // dK and dV of a KV head collect from every query head of its group: one
  // thread per (batch, KV head) keeps the accumulation race-free.
  int64_t kvHeads = a.heads / a.group;
#pragma omp parallel
  {
    std::vector<float> p(a.skv), dp(a.skv);
#pragma omp for collapse(2)
    for (int64_t b = 0; b < a.batch; ++b)
      for (int64_t kh = 0; kh < kvHeads; ++kh)
        for (int64_t h = kh * a.group; h < (kh + 1) * a.group; ++h)
          for (int64_t s = 0; s < a.sq; ++s) {
            int64_t visible = a.probabilities(Q, K, b, h, s, p.data());
            const float *qv = Q + (b * a.sq + s) * a.qw + h * a.hd;
            const float *go = GO + (b * a.sq + s) * a.qw + h * a.hd;
            float pdp = 0.0f;
            for (int64_t t = 0; t < visible; ++t) {
              const float *vv = V + (b * a.skv + t) * a.kw + kh * a.hd;
              float dot = 0.0f;
              for (int64_t i = 0; i < a.hd; ++i)
                dot += go[i] * vv[i];
              dp[t] = dot;
              pdp += p[t] * dot;
            }
            float *dqv = DQ + (b * a.sq + s) * a.qw + h * a.hd;
            for (int64_t t = 0; t < visible; ++t) {
              float ds = p[t] * (dp[t] - pdp) * a.scale;
              int64_t kvOff = (b * a.skv + t) * a.kw + kh * a.hd;
              for (int64_t i = 0; i < a.hd; ++i) {
                dqv[i] += ds * K[kvOff + i];
                DK[kvOff + i] += ds * qv[i];
                DV[kvOff + i] += p[t] * go[i];
              }
            }
          }
  }
  dq.store(DQ);
  dk.store(DK);
  dv.store(DV);
  return 0;
}

ENTRY(cross_entropy_grad) {
  Operand logits = c.operand(0), targets = c.operand(1);
  bool hasMask = c.attr(1) != 0.0;
  Operand dloss = c.operand(hasMask ? 3 : 2), out = c.operand(hasMask ? 4 : 3);
  int64_t vocab = logits.last();
  TokenWeights w;
  if (int32_t err = tokenWeights(c, targets, hasMask, vocab, w))
    return err;
  float g = dloss.get(0);
  std::vector<float> bl, bo;
  const float *L = logits.floats(bl);
  float *O = out.output(bo);
#pragma omp parallel for
  for (int64_t t = 0; t < targets.numel; ++t) {
    float *o = O + t * vocab;
    if (w.w[t] == 0.0f || w.total == 0.0) {
      std::fill(o, o + vocab, 0.0f);
      continue;
    }
    const float *row = L + t * vocab;
    float lse = logSumExp(row, vocab), coeff = float(g * w.w[t] / w.total);
    int64_t target = targets.getIndex(t);
    for (int64_t i = 0; i < vocab; ++i)
      o[i] = coeff * (std::exp(row[i] - lse) - (i == target ? 1.0f : 0.0f));
  }
  out.store(O);
  return 0;
}

ENTRY(embedding_grad) {
  Operand ids = c.operand(0), dy = c.operand(1), out = c.operand(2);
  int64_t vocab = out.dim(0), dim = out.dim(1);
  std::vector<float> bd, bo;
  const float *D = dy.floats(bd);
  float *O = out.output(bo, true);
  for (int64_t t = 0; t < ids.numel; ++t) {
    int64_t id = ids.getIndex(t);
    if (id < 0 || id >= vocab)
      return c.fail("token id %lld at position %lld is out of range [0, %lld)",
                    (long long)id, (long long)t, (long long)vocab);
    for (int64_t i = 0; i < dim; ++i)
      O[id * dim + i] += D[t * dim + i];
  }
  out.store(O);
  return 0;
}

ENTRY(global_norm) {
  int64_t n = c.numOperands();
  float scale = c.operand(n - 2).get(0);
  double ss = 0.0;
  for (int64_t g = 0; g < n - 2; ++g) {
    Operand o = c.operand(g);
    std::vector<float> buf;
    const float *x = o.floats(buf);
    double local = 0.0;
#pragma omp parallel for reduction(+ : local)
    for (int64_t i = 0; i < o.numel; ++i)
      local += double(scale * x[i]) * double(scale * x[i]);
    ss += local;
  }
  if (c.attr(0) != 0.0 && c.ctx->comm) { // ZeRO-1: every rank's shards
    float all = float(ss);
    char error[256] = {0};
    if (c.ctx->comm->all_reduce_sum(c.ctx->comm->impl, &all, 1, error,
                                    sizeof error))
      return c.fail("all-reduce of the squared norm failed: %s", error);
    ss = all;
  }
  c.operand(n - 1).set(0, float(std::sqrt(ss)));
  return 0;
}

ENTRY(adamw) {
  Operand p = c.operand(0), g = c.operand(1), m = c.operand(2),
          v = c.operand(3), np = c.operand(8), nm = c.operand(9),
          nv = c.operand(10);
  float lr = c.operand(4).get(0), t = c.operand(5).get(0);
  if (!(t >= 1.0f))
    return c.fail("step must be at least 1, got %g", double(t));
  float scale =
      clippedGradScale(c.operand(6).get(0), c.operand(7).get(0), c.attr(4));
  double b1 = c.attr(0), b2 = c.attr(1), eps = c.attr(2), wd = c.attr(3);
  float c1 = float(1.0 - std::pow(b1, double(t))),
        c2 = float(1.0 - std::pow(b2, double(t)));
  const float *P = reinterpret_cast<const float *>(p.ptr),
              *G = reinterpret_cast<const float *>(g.ptr),
              *M = reinterpret_cast<const float *>(m.ptr),
              *V = reinterpret_cast<const float *>(v.ptr);
  float *NP = reinterpret_cast<float *>(np.ptr),
        *NM = reinterpret_cast<float *>(nm.ptr),
        *NV = reinterpret_cast<float *>(nv.ptr);
  AdamWStep step{lr,         scale,     float(b1), float(b2),
                 float(eps), float(wd), c1,        c2};
#pragma omp parallel for if (p.numel > 16384)
  for (int64_t i = 0; i < p.numel; ++i)
    adamwOf(step, P[i], G[i], M[i], V[i], NP[i], NM[i], NV[i]);
  return 0;
}

ENTRY(sgd) {
  Operand p = c.operand(0), g = c.operand(1), np = c.operand(5);
  float lr = c.operand(2).get(0);
  float scale =
      clippedGradScale(c.operand(3).get(0), c.operand(4).get(0), c.attr(1));
  float wd = float(c.attr(0));
  const float *P = reinterpret_cast<const float *>(p.ptr),
              *G = reinterpret_cast<const float *>(g.ptr);
  float *NP = reinterpret_cast<float *>(np.ptr);
  for (int64_t i = 0; i < p.numel; ++i)
    NP[i] = sgdOf(lr, scale, wd, P[i], G[i]);
  return 0;
}

ENTRY(all_reduce) {
  int64_t n = c.numOperands() / 2, total = 0;
  for (int64_t i = 0; i < n; ++i)
    total += c.operand(i).numel;
  if (!c.ctx->comm) { // one rank: the sums are the operands
    for (int64_t i = 0; i < n; ++i)
      if (c.operand(i).ptr != c.operand(n + i).ptr)
        std::memcpy(c.operand(n + i).ptr, c.operand(i).ptr,
                    c.operand(i).numel * sizeof(float));
    return 0;
  }
  // One bucket, one collective call.
  std::vector<float> bucket(total);
  for (int64_t i = 0, at = 0; i < n; at += c.operand(i).numel, ++i)
    std::memcpy(bucket.data() + at, c.operand(i).ptr,
                c.operand(i).numel * sizeof(float));
  char error[256] = {0};
  if (c.ctx->comm->all_reduce_sum(c.ctx->comm->impl, bucket.data(), total,
                                  error, sizeof error) != 0)
    return c.fail("all-reduce of %lld floats failed: %s", (long long)total,
                  error);
  for (int64_t i = 0, at = 0; i < n; at += c.operand(i).numel, ++i)
    std::memcpy(c.operand(n + i).ptr, bucket.data() + at,
                c.operand(i).numel * sizeof(float));
  return 0;
}

/// ZeRO-1's bucket: operand i is a whole tensor (`wholeFirst`) or a shard,
/// operand n + i the other.
std::vector<RowShard> rowShards(const Call &c, bool wholeFirst) {
  int64_t n = c.numOperands() / 2;
  std::vector<RowShard> bucket;
  for (int64_t i = 0; i < n; ++i) {
    Operand a = c.operand(i), b = c.operand(n + i);
    Operand whole = wholeFirst ? a : b;
    bucket.push_back(
        {whole.ptr, (wholeFirst ? b : a).ptr, whole.dim(0),
         whole.numel / whole.dim(0) * infir2rt_dtype_size(whole.dtype)});
  }
  return bucket;
}

ENTRY(reduce_scatter) {
  char error[256] = {0};
  if (reduceScatterHost(c.ctx, c.intAttr(0), rowShards(c, true), error,
                        sizeof error))
    return c.fail("reduce-scatter: %s", error);
  return 0;
}

ENTRY(all_gather) {
  char error[256] = {0};
  if (allGatherHost(c.ctx, c.intAttr(0), rowShards(c, false), error,
                    sizeof error))
    return c.fail("all-gather: %s", error);
  return 0;
}

ENTRY(quantize) {
  Operand x = c.operand(0), data = c.operand(1), scale = c.operand(2);
  FP8Format format = c.intAttr(0) ? FP8Format::E5M2 : FP8Format::E4M3;
  std::vector<int64_t> block(x.rank);
  for (int64_t i = 0; i < x.rank; ++i)
    block[i] = c.intAttr(2 + i);
  std::vector<float> bx;
  return quantizeInto(c, x.floats(bx), data, scale, format, c.attr(1) != 0.0,
                      block.data());
}

ENTRY(quantize_dual) {
  Operand x = c.operand(0), data = c.operand(1), scale = c.operand(2),
          dataT = c.operand(3), scaleT = c.operand(4);
  FP8Format format = c.intAttr(0) ? FP8Format::E5M2 : FP8Format::E4M3;
  bool pow2 = c.attr(1) != 0.0;
  std::vector<int64_t> block(x.rank);
  for (int64_t i = 0; i < x.rank; ++i)
    block[i] = c.intAttr(2 + i);
  int64_t blockT[2] = {c.intAttr(2 + x.rank), c.intAttr(3 + x.rank)};
  std::vector<float> bx;
  const float *X = x.floats(bx);
  if (int32_t err = quantizeInto(c, X, data, scale, format, pow2, block.data()))
    return err;
  // The [K, T] transpose of the [T, K] view.
  int64_t cols = x.last(), rows = x.rows();
  std::vector<float> t(x.numel);
#pragma omp parallel for
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i)
      t[j * rows + i] = X[i * cols + j];
  return quantizeInto(c, t.data(), dataT, scaleT, format, pow2, blockT);
}

ENTRY(dequantize) {
  Operand data = c.operand(0), scale = c.operand(1), out = c.operand(2);
  std::vector<int64_t> block(data.rank);
  for (int64_t i = 0; i < data.rank; ++i)
    block[i] = c.intAttr(i);
  std::vector<float> x = dequantized(data, scale, block.data());
  for (int64_t i = 0; i < out.numel; ++i)
    out.set(i, x[i]);
  return 0;
}

ENTRY(scaled_matmul) {
  Operand a = c.operand(0), sa = c.operand(1), b = c.operand(2),
          sb = c.operand(3), out = c.operand(4);
  std::vector<int64_t> blockA(a.rank), blockB(b.rank);
  for (int64_t i = 0; i < a.rank; ++i)
    blockA[i] = c.intAttr(i);
  for (int64_t i = 0; i < b.rank; ++i)
    blockB[i] = c.intAttr(a.rank + i);
  // FP8 values times their scales are exact in FP32 under the pow2 rule
  // (and rounded once under fp32 scales); the GEMM accumulates in FP32.
  std::vector<float> A = dequantized(a, sa, blockA.data());
  std::vector<float> B = dequantized(b, sb, blockB.data());
  int64_t k = a.last(), m = a.dim(-2), n = b.dim(-2);
  int64_t batch = a.numel / (m * k);
  std::vector<float> bo;
  float *C = out.output(bo);
  if (b.rank == 2)
    sgemm(false, true, batch * m, n, k, A.data(), B.data(), C);
  else
    for (int64_t p = 0; p < batch; ++p)
      sgemm(false, true, m, n, k, A.data() + p * m * k, B.data() + p * n * k,
            C + p * m * n);
  out.store(C);
  return 0;
}

ENTRY(amax) {
  Operand x = c.operand(0), out = c.operand(1);
  std::vector<int64_t> block(x.rank);
  for (int64_t i = 0; i < x.rank; ++i)
    block[i] = c.intAttr(i);
  Blocks g(x, block.data());
  std::vector<float> amax(out.numel, 0.0f);
  forEachBlocked(g, 0, x.numel / g.C, [&](int64_t i, int64_t b) {
    amax[b] = nanMax(amax[b], std::fabs(x.get(i)));
  });
  for (int64_t i = 0; i < out.numel; ++i)
    out.set(i, amax[i]);
  return 0;
}

// The fused producers run as their two calls on the CPU (the CUDA backend
// fuses them into the producer's kernel).
namespace {

int32_t producerThenQuantizeDual(const Call &c,
                                 int32_t (*producer)(const Call &),
                                 std::initializer_list<int64_t> operands,
                                 int64_t producerAttrs) {
  int64_t out = *(operands.end() - 1);
  std::vector<int64_t> first =
      subDescriptor(c.desc, operands, 0, producerAttrs);
  std::vector<int64_t> second =
      subDescriptor(c.desc, {out, out + 1, out + 2, out + 3, out + 4},
                    producerAttrs, c.numAttrs() - producerAttrs);
  if (int32_t rc = producer(Call{c.ctx, first.data(), c.where}))
    return rc;
  return quantize_dualImpl(Call{c.ctx, second.data(), c.where});
}

} // namespace

ENTRY(rms_norm_quantize_dual) {
  return producerThenQuantizeDual(c, rms_normImpl, {0, 1, 2}, 1);
}

ENTRY(swiglu_quantize_dual) {
  return producerThenQuantizeDual(c, swigluImpl, {0, 1, 2}, 0);
}
