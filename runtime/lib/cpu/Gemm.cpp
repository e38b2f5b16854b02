//===- Gemm.cpp - GEMMs on the CPU ----------------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// infir2.matmul and fp8.scaled_matmul with FP32 accumulation. Operands that
// are exactly BF16 (BF16 tensors; FP8 values times power-of-two scales)
// multiply as BF16 through oneDNN where the CPU has BF16 instructions
// (Bf16Gemm.h). FP8 under other FP32 scales multiplies its unscaled values
// block by block and applies the scales in cuBLASLt's order
// (blockScaledGemm). The others, and every GEMM on other CPUs, go through
// BLAS (cblas_sgemm) on FP32 operands. With an accumulator (an FP32 or BF16
// result that starts as `acc`, in place when the planner gave both one buffer),
// every path adds the product to what the result holds: oneDNN with a sum
// post-op and BLAS with beta = 1 (which may add partial sums of K as they
// come), the block-scaled path once at the end, as cuBLASLt's epilogue
// does.
//
//===----------------------------------------------------------------------===//

#include "Bf16Gemm.h"
#include "Blocks.h"
#include "Fp8Loops.h"
#include "Operand.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace infir2::rt::cpu {

namespace {

/// C[m, n] = op(A)·op(B) for row-major FP32 matrices (leading dimensions
/// lda, ldb, ldc), split by rows of C across the OpenMP threads. OpenBLAS
/// itself runs single-threaded (see the constructor below): one thread pool,
/// instead of OpenMP's and OpenBLAS's spinning against each other on the
/// same cores.
void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
           int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
           bool add = false) {
  int threads = omp_get_max_threads();
  int64_t chunk = std::max<int64_t>(16, (m + threads - 1) / threads);
  int64_t parts = (m + chunk - 1) / chunk;
#pragma omp parallel for if (parts > 1 && m * n * k > (1 << 18))
  for (int64_t part = 0; part < parts; ++part) {
    int64_t m0 = part * chunk, rows = std::min(chunk, m - m0);
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, rows, n, k, 1.0f,
                a + (ta ? m0 : m0 * lda), lda, b, ldb, add ? 1.0f : 0.0f,
                c + m0 * ldc, ldc);
  }
}

/// The same through the BF16 path, C in FP32 or BF16 (`cBf16`); false when
/// it is not taken.
bool gemm16(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
            const uint16_t *a, const uint16_t *b, void *c, bool cBf16,
            bool add) {
  return bf16Gemm(ta, tb, m, n, k, a, ta ? m : k, b, tb ? k : n, c, n, cBf16,
                  add);
}

/// Runs op(A)·op(B) over `batch` products (B shared when `sharedRhs`) in
/// BF16, added to `out` when `add`; false when the BF16 path is not taken
/// (before any output is written).
bool batchedGemm16(bool ta, bool tb, int64_t batch, int64_t m, int64_t n,
                   int64_t k, bool sharedRhs, const uint16_t *A,
                   const uint16_t *B, const Operand &out, bool add) {
  bool cBf16 = out.dtype == INFIR2RT_BF16;
  if (!cBf16 && out.dtype != INFIR2RT_F32)
    return false;
  int64_t cBytes = cBf16 ? 2 : 4;
  if (sharedRhs && !ta) // one GEMM over all rows
    return gemm16(false, tb, batch * m, n, k, A, B, out.ptr, cBf16, add);
  for (int64_t p = 0; p < batch; ++p)
    if (!gemm16(ta, tb, m, n, k, A + p * m * k,
                B + (sharedRhs ? 0 : p * k * n), out.ptr + p * m * n * cBytes,
                cBf16, add))
      return false; // only the first can fail: the shapes repeat
  return true;
}

struct SingleThreadedBlas {
  SingleThreadedBlas() { openblas_set_num_threads(1); }
} singleThreadedBlas;

/// With an accumulator (operand `at`, when the call has one): starts the
/// result from it (a copy unless they share a buffer). Sets `add`.
int32_t startFromAccumulator(const Call &c, bool hasAcc, int64_t at,
                             const Operand &out, bool &add) {
  add = hasAcc;
  if (!add)
    return 0;
  Operand acc = c.operand(at);
  if ((out.dtype != INFIR2RT_F32 && out.dtype != INFIR2RT_BF16) ||
      acc.dtype != out.dtype || acc.numel != out.numel)
    return c.fail("%s", "a GEMM accumulates into an f32 or bf16 result of "
                        "the accumulator's type and shape");
  if (acc.ptr != out.ptr)
    std::memcpy(out.ptr, acc.ptr,
                size_t(out.numel * infir2rt_dtype_size(out.dtype)));
  return 0;
}

/// Where a GEMM writes its FP32 result: the result itself when it is FP32,
/// else `buffer`, holding the result's values when the GEMM adds to them
/// (an accumulator, rounded once by Operand::store).
float *resultFloats(const Operand &out, Buffer &buffer, bool add) {
  return add ? const_cast<float *>(out.floats(buffer)) : out.output(buffer);
}

/// The most bytes one FP32 tile of the fallback GEMM takes (a block of
/// op(A)'s rows, of op(B)'s columns, or of C): 16 MiB, or
/// INFIR2_CPU_GEMM_TILE_BYTES (tests make it tiny to cross tile edges).
int64_t fallbackTileBytes() {
  static const int64_t bytes = [] {
    const char *v = std::getenv("INFIR2_CPU_GEMM_TILE_BYTES");
    long long n = v ? std::atoll(v) : 0;
    return n > 0 ? int64_t(n) : int64_t(16) << 20;
  }();
  return bytes;
}

/// Rows [r0, r0 + rows) and columns [c0, c0 + cols) of a stored row-major
/// matrix, as row-major FP32 in `out`; `rows_(r, c0, cols, dst)` reads
/// `cols` elements of stored row r from column c0 as FP32.
template <typename Rows>
void widenBlock(const Rows &rows_, int64_t r0, int64_t rows, int64_t c0,
                int64_t cols, float *out) {
#pragma omp parallel for if (rows * cols > 65536)
  for (int64_t r = 0; r < rows; ++r)
    rows_(r0 + r, c0, cols, out + r * cols);
}

/// C (m x n, at element `cBase` of `out`) = op(A)·op(B) (+ C when `add`)
/// through FP32 SGEMM, where `a` and `b` read rows of A's and B's storage
/// (widenBlock), in tiles of at most fallbackTileBytes() each: for every
/// block of C, the products of K blocks added into it (FP32; a C of another
/// type is rounded once, at the end). Operands are widened a block of their
/// stored rows at a time, so no FP32 copy of a whole operand exists and the
/// backend's temporaries stay within a few tiles whatever the shapes (the
/// memory plan holds); each operand is widened about n / 4096 (A) or
/// m / 4096 (B) times.
template <typename RowsA, typename RowsB>
void fallbackGemm(const RowsA &a, bool ta, const RowsB &b, bool tb,
                  const Operand &out, int64_t cBase, int64_t m, int64_t n,
                  int64_t k, bool add) {
  int64_t tile = std::max<int64_t>(fallbackTileBytes() / 4, 1);
  bool cFloat = out.dtype == INFIR2RT_F32;
  int64_t mb = std::min<int64_t>(m, 4096), nb = std::min<int64_t>(n, 4096);
  while (!cFloat && mb * nb > tile && (mb > 1 || nb > 1))
    (mb >= nb ? mb : nb) = std::max<int64_t>((mb >= nb ? mb : nb) / 2, 1);
  int64_t kb = std::clamp<int64_t>(tile / std::max(mb, nb), 1, k);
  Buffer aTile, bTile, cTile;
  for (int64_t i0 = 0; i0 < m; i0 += mb) {
    int64_t rows = std::min(mb, m - i0);
    for (int64_t j0 = 0; j0 < n; j0 += nb) {
      int64_t cols = std::min(nb, n - j0), at = cBase + i0 * n + j0;
      float *c = cFloat ? reinterpret_cast<float *>(out.ptr) + at
                        : cTile.resize(rows * cols);
      int64_t ldc = cFloat ? n : cols;
      if (!cFloat && add)
#pragma omp parallel for if (rows * cols > 65536)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t q = 0; q < cols; ++q)
            c[r * cols + q] = out.get(at + r * n + q);
      for (int64_t k0 = 0; k0 < k; k0 += kb) {
        int64_t depth = std::min(kb, k - k0);
        float *ap = aTile.resize(rows * depth),
              *bp = bTile.resize(depth * cols);
        // Each tile as stored: A is m x k (k x m when ta), B k x n (n x k
        // when tb).
        if (ta)
          widenBlock(a, k0, depth, i0, rows, ap);
        else
          widenBlock(a, i0, rows, k0, depth, ap);
        if (tb)
          widenBlock(b, j0, cols, k0, depth, bp);
        else
          widenBlock(b, k0, depth, j0, cols, bp);
        sgemm(ta, tb, rows, cols, depth, ap, ta ? rows : depth, bp,
              tb ? depth : cols, c, ldc, add || k0 > 0);
      }
      if (!cFloat)
#pragma omp parallel for if (rows * cols > 65536)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t q = 0; q < cols; ++q)
            out.set(at + r * n + q, c[r * cols + q]);
    }
  }
}

/// Rows of `x` (`width` elements each, from element `base`) as FP32.
struct StoredRows {
  const Operand &x;
  int64_t base, width;
  void operator()(int64_t r, int64_t c0, int64_t cols, float *dst) const {
    int64_t e = base + r * width + c0;
    if (x.dtype == INFIR2RT_BF16) {
      const auto *in = reinterpret_cast<const uint16_t *>(x.ptr) + e;
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c)
        dst[c] = bf16ToFloat(in[c]);
    } else {
      for (int64_t c = 0; c < cols; ++c)
        dst[c] = x.get(e + c);
    }
  }
};

/// Rows of an FP8 operand times their scales (what dequantized() makes),
/// from element `base`: exact under power-of-two scales, else rounded once.
struct DequantizedRows {
  const Operand &x;
  const Blocks &g;
  const float *table, *scales;
  int64_t base;
  void operator()(int64_t r, int64_t c0, int64_t cols, float *dst) const {
    int64_t q = (base / g.C) + r;
    const uint8_t *codes = x.ptr + q * g.C + c0;
    if (g.fast()) {
      int64_t rowBase = g.rowBase(q);
      for (int64_t c = 0; c < cols; ++c)
        dst[c] = table[codes[c]] * scales[rowBase + (c0 + c) / g.bc];
    } else {
      for (int64_t c = 0; c < cols; ++c)
        dst[c] = table[codes[c]] * scales[g.index(q, c0 + c)];
    }
  }
};

} // namespace

int32_t matmul(const Call &c) {
  Operand a = c.operand(0), b = c.operand(1), out = c.operand(2);
  auto attributes = c.attrs<attrs::matmul>();
  bool ta = attributes.transpose_lhs, tb = attributes.transpose_rhs,
       add = false;
  if (int32_t rc = startFromAccumulator(c, attributes.has_acc, 3, out, add))
    return rc;
  int64_t m = a.dim(ta ? -1 : -2), k = a.dim(ta ? -2 : -1);
  int64_t n = b.dim(tb ? -2 : -1);
  int64_t batch = a.numel / (m * k);
  bool sharedRhs = b.rank == 2;
  if (bf16GemmEnabled() && a.dtype == INFIR2RT_BF16 &&
      b.dtype == INFIR2RT_BF16 &&
      batchedGemm16(ta, tb, batch, m, n, k, sharedRhs,
                    reinterpret_cast<const uint16_t *>(a.ptr),
                    reinterpret_cast<const uint16_t *>(b.ptr), out, add))
    return 0;
  int64_t aWidth = ta ? m : k, bWidth = tb ? k : n;
  if (sharedRhs && !ta) { // one GEMM, all rows
    fallbackGemm(StoredRows{a, 0, aWidth}, false, StoredRows{b, 0, bWidth}, tb,
                 out, 0, batch * m, n, k, add);
  } else {
    for (int64_t p = 0; p < batch; ++p)
      fallbackGemm(StoredRows{a, p * m * k, aWidth}, ta,
                   StoredRows{b, sharedRhs ? 0 : p * k * n, bWidth}, tb, out,
                   p * m * n, m, n, k, add);
  }
  return 0;
}

namespace {

/// One K block folded in, FP32 throughout, each FMA rounded once, in the
/// order cuBLASLt uses (measured on an H100, docs/Running.md):
/// acc = fma(part · sa, sb, acc) when both operands have 1x128 groups,
/// acc = fma(part, sa · sb, acc) when one has 128x128 blocks or both one
/// scale (then K is one block).
template <typename Fma>
inline void foldBlock(float *acc, const float *part, const float *sa,
                      const float *sb, int64_t rows, int64_t n, bool combined,
                      Fma fma) {
#pragma omp parallel for if (rows * n > 65536)
  for (int64_t r = 0; r < rows; ++r) {
    float s = sa[r];
    if (combined) {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j)
        acc[r * n + j] = fma(part[r * n + j], s * sb[j], acc[r * n + j]);
    } else {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j)
        acc[r * n + j] = fma(part[r * n + j] * s, sb[j], acc[r * n + j]);
    }
  }
}

__attribute__((target("fma"))) void
foldBlockFma(float *acc, const float *part, const float *sa, const float *sb,
             int64_t rows, int64_t n, bool combined) {
  foldBlock(acc, part, sa, sb, rows, n, combined,
            [](float x, float y, float z) { return __builtin_fmaf(x, y, z); });
}

void foldBlockAny(float *acc, const float *part, const float *sa,
                  const float *sb, int64_t rows, int64_t n, bool combined) {
  static const bool hardware = __builtin_cpu_supports("fma");
  if (hardware)
    return foldBlockFma(acc, part, sa, sb, rows, n, combined);
  foldBlock(acc, part, sa, sb, rows, n, combined,
            [](float x, float y, float z) { return std::fma(x, y, z); });
}

/// scaled_matmul under FP32 scales, in cuBLASLt's arithmetic (the CUDA
/// backend's): each K block's product of the unscaled FP8 values (exact
/// products, BF16 through oneDNN or FP32 SGEMM) summed in FP32, then folded
/// in block after block (foldBlock). False when the two
/// operands' blocks do not split K alike, or B is batched (the caller then
/// multiplies the dequantized values).
bool blockScaledGemm(const Operand &a, const Operand &sa, const int64_t *blockA,
                     const Operand &b, const Operand &sb, const int64_t *blockB,
                     int64_t rows, int64_t n, int64_t k, const Operand &out,
                     bool add) {
  Blocks ga(a, blockA), gb(b, blockB);
  int64_t bk = ga.bc;
  if (b.rank != 2 || gb.bc != bk || k % bk != 0 || !ga.fast() || !gb.fast())
    return false;
  std::vector<float> scaleA(sa.numel), scaleB(sb.numel);
  for (int64_t i = 0; i < sa.numel; ++i)
    scaleA[i] = sa.get(i);
  for (int64_t i = 0; i < sb.numel; ++i)
    scaleB[i] = sb.get(i);
  // 1x128 groups on both sides (cuBLASLt's VEC128 x VEC128), else 128x128
  // blocks on one side or one scale each.
  bool combined = !(ga.br == 1 && sa.numel > 1 && gb.br == 1 && sb.numel > 1);
  bool bf16 = bf16GemmEnabled();
  Scratch<uint16_t> a16, b16;
  Scratch<float> a32, b32, part(rows * n), rowScale(rows), colScale(n);
  auto decode = [&](bool asBf16) {
    decodedCodes(a, asBf16 ? nullptr : a32.resize(a.numel),
                 asBf16 ? a16.resize(a.numel) : nullptr);
    decodedCodes(b, asBf16 ? nullptr : b32.resize(b.numel),
                 asBf16 ? b16.resize(b.numel) : nullptr);
  };
  decode(bf16);
  Buffer bo;
  // With an accumulator the product is made apart and added once at the
  // end, as cuBLASLt's epilogue adds C (D = product + C).
  Scratch<float> sum;
  float *result = resultFloats(out, bo, add);
  float *acc = add ? sum.resize(rows * n) : result;
  std::memset(acc, 0, size_t(rows * n) * sizeof(float));
  for (int64_t kb = 0; kb < k / bk; ++kb) {
    if (!bf16 ||
        !bf16Gemm(false, true, rows, n, bk, a16.data() + kb * bk, k,
                  b16.data() + kb * bk, k, part.data(), n, false)) {
      if (bf16) { // oneDNN refused the shapes: FP32 from here on
        bf16 = false;
        decode(false);
      }
      sgemm(false, true, rows, n, bk, a32.data() + kb * bk, k,
            b32.data() + kb * bk, k, part.data(), n);
    }
    for (int64_t r = 0; r < rows; ++r)
      rowScale.data()[r] = scaleA[ga.rowBase(r) + kb];
    for (int64_t j = 0; j < n; ++j)
      colScale.data()[j] = scaleB[gb.rowBase(j) + kb];
    foldBlockAny(acc, part.data(), rowScale.data(), colScale.data(), rows, n,
                 combined);
  }
  if (add) {
#pragma omp parallel for simd if (rows * n > 65536)
    for (int64_t i = 0; i < rows * n; ++i)
      result[i] += acc[i];
  }
  out.store(result);
  return true;
}

} // namespace

int32_t scaled_matmul(const Call &c) {
  Operand a = c.operand(0), sa = c.operand(1), b = c.operand(2),
          sb = c.operand(3), out = c.operand(4);
  auto attributes = c.attrs<attrs::scaled_matmul>();
  std::vector<int64_t> blockA = attributes.lhs_block.values(),
                       blockB = attributes.rhs_block.values();
  bool add = false;
  if (int32_t rc = startFromAccumulator(c, attributes.has_acc, 5, out, add))
    return rc;
  int64_t k = a.last(), m = a.dim(-2), n = b.dim(-2);
  int64_t batch = a.numel / (m * k);
  // FP8 values times power-of-two scales are exact in BF16: then the GEMM
  // multiplies BF16 values, exactly what it would multiply in FP32.
  if (bf16GemmEnabled() &&
      (out.dtype == INFIR2RT_F32 || out.dtype == INFIR2RT_BF16)) {
    Scratch<uint16_t> A16, B16;
    if (dequantizedBf16(a, sa, blockA.data(), A16) &&
        dequantizedBf16(b, sb, blockB.data(), B16) &&
        batchedGemm16(false, true, batch, m, n, k, b.rank == 2, A16.data(),
                      B16.data(), out, add))
      return 0;
  }
  if ((out.dtype == INFIR2RT_F32 || out.dtype == INFIR2RT_BF16) &&
      !(powerOfTwoScales(sa) && powerOfTwoScales(sb)) &&
      blockScaledGemm(a, sa, blockA.data(), b, sb, blockB.data(), batch * m, n,
                      k, out, add))
    return 0;
  // Otherwise the dequantized values (rounded once under FP32 scales),
  // multiplied in FP32 SGEMM a tile at a time (dequantized as they are
  // widened: no whole FP32 copy of either operand).
  Blocks ga(a, blockA.data()), gb(b, blockB.data());
  std::vector<float> scaleA(sa.numel), scaleB(sb.numel);
  for (int64_t i = 0; i < sa.numel; ++i)
    scaleA[i] = sa.get(i);
  for (int64_t i = 0; i < sb.numel; ++i)
    scaleB[i] = sb.get(i);
  auto tableOf = [](const Operand &x) {
    return decodeTable(x.dtype == INFIR2RT_E5M2 ? FP8Format::E5M2
                                                : FP8Format::E4M3);
  };
  if (b.rank == 2) {
    fallbackGemm(DequantizedRows{a, ga, tableOf(a), scaleA.data(), 0}, false,
                 DequantizedRows{b, gb, tableOf(b), scaleB.data(), 0}, true,
                 out, 0, batch * m, n, k, add);
  } else {
    for (int64_t p = 0; p < batch; ++p)
      fallbackGemm(DequantizedRows{a, ga, tableOf(a), scaleA.data(), p * m * k},
                   false,
                   DequantizedRows{b, gb, tableOf(b), scaleB.data(), p * n * k},
                   true, out, p * m * n, m, n, k, add);
  }
  return 0;
}

} // namespace infir2::rt::cpu
