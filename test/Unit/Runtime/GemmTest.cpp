//===- GemmTest.cpp - The CPU backend's GEMMs against FP64 sums -----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// matmul on BF16 operands and scaled_matmul on FP8 operands, through
// whichever path this process takes (BF16 products through oneDNN, or FP32
// SGEMM with INFIR2_CPU_GEMM=fp32: ctest runs this binary both ways), against
// FP64 sums of the same products written here.
//
// Tolerance: the products of BF16 (or FP8 times power-of-two scale) values
// are exact in FP32 on both paths, so the only error of an FP32 result is
// the FP32 summation's, bounded in any order by (K - 1)·2^-24·Σ|a·b| (Higham,
// Accuracy and Stability, §3.1), taken here as K·2^-24·Σ|a·b|. A BF16 result
// adds its one rounding, 2^-8·|c| (RNE, 8-bit significand). A product that
// was not exact (a value rounded to BF16 on the way in) errs by up to
// 2^-8·|a·b| each, far outside the bound at K = 256. With an accumulator
// the sum starts at it (BLAS adds partial sums of K into the result), so
// each rounding is relative to |acc| + Σ|a·b|: (K + 2)·2^-24 of that.
//
//===----------------------------------------------------------------------===//

#include "DescriptorBuilder.h"

#include "infir2/runtime/FP8.h"
#include "infir2/runtime/Float.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

using infir2::test::Call;
using namespace infir2::rt;

namespace {

constexpr uint32_t kSeed = 20261126;

/// Which path this process must take, decided independently of the
/// runtime: the environment, then the CPU's own feature flags.
bool expectBf16Path() {
  const char *v = std::getenv("INFIR2_CPU_GEMM");
  if (v && std::string(v) == "fp32")
    return false;
  return __builtin_cpu_supports("avx512bf16");
}

TEST(CpuGemm, TakesTheExpectedPath) {
  std::string info = infir2rt_cpu_gemm_info();
  std::printf("GEMM path: %s\n", info.c_str());
  if (expectBf16Path())
    EXPECT_NE(info.find("oneDNN"), std::string::npos) << info;
  else
    EXPECT_EQ(info.find("BF16 products"), std::string::npos) << info;
  // A value that is neither fp32 nor auto is named, not silently taken.
  const char *v = std::getenv("INFIR2_CPU_GEMM");
  bool odd = v && *v && std::string(v) != "fp32" && std::string(v) != "auto";
  EXPECT_EQ(info.find(" ignored (fp32 or auto)") != std::string::npos, odd)
      << info;
}

struct Shape {
  bool ta, tb, sharedRhs, bf16Out;
  int64_t batch;
  /// With an accumulator of the result's type (of N(0, 1)·sqrt(K) entries,
  /// the products' scale), in a buffer of its own or the result's.
  bool accumulate = false, inPlace = false;
};

class CpuMatmul : public ::testing::TestWithParam<Shape> {};

TEST_P(CpuMatmul, Bf16OperandsAgreeWithFp64Sums) {
  const Shape s = GetParam();
  const int64_t m = 40, n = 72, k = 256, batch = s.batch;
  std::mt19937 rng(kSeed);
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Call c;
  std::vector<int64_t> aShape = s.ta ? std::vector<int64_t>{k, m}
                                     : std::vector<int64_t>{m, k};
  std::vector<int64_t> bShape = s.tb ? std::vector<int64_t>{n, k}
                                     : std::vector<int64_t>{k, n};
  aShape.insert(aShape.begin(), batch);
  if (!s.sharedRhs)
    bShape.insert(bShape.begin(), batch);
  int a = c.add(aShape, INFIR2RT_BF16), b = c.add(bShape, INFIR2RT_BF16);
  int y = c.add({batch, m, n}, s.bf16Out ? INFIR2RT_BF16 : INFIR2RT_F32);
  int64_t yType = s.bf16Out ? INFIR2RT_BF16 : INFIR2RT_F32;
  int acc = s.accumulate ? c.add({batch, m, n}, yType) : -1;
  c.attrs({double(s.ta), double(s.tb), s.accumulate ? 1.0 : 0.0});
  std::vector<float> accValues(s.accumulate ? batch * m * n : 0);
  for (float &v : accValues) // sqrt(K), in the accumulator's type
    v = s.bf16Out ? bf16ToFloat(floatToBF16(normal(rng) * 16.0f))
                  : normal(rng) * 16.0f;
  auto put = [&](int operand, int64_t i, float v) {
    if (s.bf16Out)
      reinterpret_cast<uint16_t *>(c.u8(operand))[i] = floatToBF16(v);
    else
      c.f32(operand)[i] = v;
  };
  if (s.accumulate) {
    for (int64_t i = 0; i < batch * m * n; ++i) { // poisoned, or in place
      put(acc, i, accValues[i]);
      put(y, i, s.inPlace ? accValues[i] : 1e30f);
    }
    if (s.inPlace)
      c.desc[2 + acc * INFIR2RT_OPERAND_WORDS + 3] =
          c.desc[2 + y * INFIR2RT_OPERAND_WORDS + 3];
  }
  auto *A = reinterpret_cast<uint16_t *>(c.u8(a));
  auto *B = reinterpret_cast<uint16_t *>(c.u8(b));
  int64_t na = batch * m * k, nb = (s.sharedRhs ? 1 : batch) * k * n;
  for (int64_t i = 0; i < na; ++i)
    A[i] = floatToBF16(normal(rng));
  for (int64_t i = 0; i < nb; ++i)
    B[i] = floatToBF16(normal(rng));
  ASSERT_EQ(c.run(infir2rt_matmul), 0);
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0, abs = 0.0;
        for (int64_t q = 0; q < k; ++q) {
          double x = bf16ToFloat(A[p * m * k + (s.ta ? q * m + i : i * k + q)]);
          double w = bf16ToFloat(B[(s.sharedRhs ? 0 : p * k * n) +
                                   (s.tb ? j * k + q : q * n + j)]);
          sum += x * w;
          abs += std::fabs(x * w);
        }
        int64_t at = (p * m + i) * n + j;
        double got = s.bf16Out
                         ? bf16ToFloat(reinterpret_cast<uint16_t *>(c.u8(y))[at])
                         : c.f32(y)[at];
        double bound = k * std::ldexp(abs, -24) +
                       (s.bf16Out ? std::ldexp(std::fabs(sum), -8) : 0);
        if (s.accumulate) { // BLAS may add partial sums into the result
          sum += accValues[at];
          bound = (k + 2) * std::ldexp(abs + std::fabs(accValues[at]), -24) +
                  (s.bf16Out ? std::ldexp(std::fabs(sum), -8) : 0);
        }
        ASSERT_LE(std::fabs(got - sum), bound)
            << "C[" << p << "," << i << "," << j << "]";
      }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, CpuMatmul,
    ::testing::Values(Shape{false, false, true, false, 2},
                      Shape{false, true, true, false, 2},
                      Shape{true, false, false, false, 2},
                      Shape{true, true, false, true, 3},
                      Shape{false, true, false, true, 1},
                      Shape{false, false, false, false, 3},
                      Shape{false, true, true, false, 2, true, false},
                      Shape{true, false, false, false, 2, true, true},
                      // A BF16 accumulator (a residual): rounded once.
                      Shape{false, true, true, true, 2, true, false},
                      Shape{false, true, false, true, 1, true, true}));

/// scaled_matmul of E4M3 data, A in 1x128 groups and B in 128x128 blocks,
/// with power-of-two scales (the recipe's: the BF16 path) or arbitrary FP32
/// ones (not exact in BF16: the FP32 path, whatever the CPU).
void checkScaledMatmul(bool pow2) {
  const int64_t m = 64, n = 256, k = 256;
  std::mt19937 rng(kSeed + pow2);
  SCOPED_TRACE("seed " + std::to_string(kSeed + pow2));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> exponent(-12, 4);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  Call c;
  int a = c.add({m, k}, INFIR2RT_E4M3), as = c.add({m, k / 128}, INFIR2RT_F32),
      b = c.add({n, k}, INFIR2RT_E4M3),
      bs = c.add({n / 128, k / 128}, INFIR2RT_F32),
      y = c.add({m, n}, INFIR2RT_F32);
  c.attrs({1, 128, 128, 128, 0.0}); // blocks, then has_acc
  auto fp8 = [&](uint8_t *p, int64_t count) {
    for (int64_t i = 0; i < count; ++i) {
      int v;
      do
        v = byte(rng);
      while ((v & 0x7f) == 0x7f); // not NaN
      p[i] = uint8_t(v);
    }
  };
  auto scales = [&](float *p, int64_t count) {
    for (int64_t i = 0; i < count; ++i)
      p[i] = std::ldexp(pow2 ? 1.0f : mantissa(rng), exponent(rng));
  };
  fp8(c.u8(a), m * k);
  fp8(c.u8(b), n * k);
  scales(c.f32(as), m * k / 128);
  scales(c.f32(bs), n * k / 128 / 128);
  ASSERT_EQ(c.run(infir2rt_scaled_matmul), 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0, abs = 0.0;
      for (int64_t q = 0; q < k; ++q) {
        double x = double(e4m3ToFloat(c.u8(a)[i * k + q])) *
                   c.f32(as)[i * (k / 128) + q / 128];
        double w = double(e4m3ToFloat(c.u8(b)[j * k + q])) *
                   c.f32(bs)[(j / 128) * (k / 128) + q / 128];
        // Exact products on every path: under FP32 scales the FP8 values
        // are multiplied unscaled, block by block (cuBLASLt's arithmetic),
        // so the error is FP32 summation's: the 128 products of a block,
        // then one FMA per block, within K·2^-24·Σ|a·b|.
        sum += x * w;
        abs += std::fabs(x * w);
      }
      ASSERT_LE(std::fabs(c.f32(y)[i * n + j] - sum), k * std::ldexp(abs, -24))
          << "C[" << i << "," << j << "]";
    }
}

TEST(CpuScaledMatmul, PowerOfTwoScalesAgreeWithFp64Sums) {
  checkScaledMatmul(true);
}

TEST(CpuScaledMatmul, Fp32ScalesAgreeWithFp64Sums) { checkScaledMatmul(false); }

/// Under FP32 scales the result is cuBLASLt's arithmetic, as measured on an
/// H100 (docs/Running.md): over the K blocks, each partial the FP32 sum of
/// the unscaled FP8 products,
///   1x128 x 1x128 groups:           acc = fma(partial · sA, sB, acc)
///   1x128 x 128x128, or tensorwise: acc = fma(partial, sA · sB, acc)
/// (tensorwise: one block of all K). With FP8 values in {±0.5, ±1, ..., ±12}
/// every partial is exact in FP32 whatever the order, so the result is known
/// to the bit: a kernel that multiplied dequantized (rounded) values, summed
/// before scaling, or applied the scales in another order, is caught.
struct FoldCase {
  const char *name;
  std::vector<int64_t> lhs;   // [..., 512]; the rhs is [256, 512]
  std::vector<double> blocks; // lhs block (lhs rank), then the rhs block
  std::vector<int64_t> lhsScale, rhsScale;
  bool combined; // sA · sB first
  bool bf16Out = false;
};

void PrintTo(const FoldCase &f, std::ostream *os) { *os << f.name; }

class CpuScaledMatmulBits : public ::testing::TestWithParam<FoldCase> {};

TEST_P(CpuScaledMatmulBits, Fp32ScalesFollowCublasLt) {
  const FoldCase &f = GetParam();
  const int64_t n = 256, k = 512, rank = int64_t(f.lhs.size());
  int64_t m = 1;
  for (int64_t i = 0; i + 1 < rank; ++i)
    m *= f.lhs[i];
  int64_t lhsRows = int64_t(f.blocks[rank - 2]), rhsRows = int64_t(f.blocks[rank]);
  int64_t bk = int64_t(f.blocks[rank - 1]), kb = k / bk;
  std::mt19937 rng(kSeed + 7);
  SCOPED_TRACE("seed " + std::to_string(kSeed + 7));
  std::uniform_int_distribution<int> pick(0, 15);
  std::uniform_real_distribution<float> scale(0.001f, 3.0f);
  Call c;
  std::vector<int64_t> outShape = f.lhs;
  outShape.back() = n;
  int a = c.add(f.lhs, INFIR2RT_E4M3), as = c.add(f.lhsScale, INFIR2RT_F32),
      b = c.add({n, k}, INFIR2RT_E4M3), bs = c.add(f.rhsScale, INFIR2RT_F32),
      y = c.add(outShape, f.bf16Out ? INFIR2RT_BF16 : INFIR2RT_F32);
  std::vector<double> attrs = f.blocks;
  attrs.push_back(0.0); // has_acc
  c.attrs(attrs);
  // E4M3 codes of 0.5, 1, 1.5, ..., 12 (and their negatives): exponents
  // -1..3 with mantissas 0 or 4 (x1.5).
  auto code = [&] {
    int e = pick(rng) % 5, half = pick(rng) % 2, sign = pick(rng) % 2;
    return uint8_t(sign << 7 | (e + 6) << 3 | half << 2);
  };
  for (int64_t i = 0; i < m * k; ++i)
    c.u8(a)[i] = code();
  for (int64_t i = 0; i < n * k; ++i)
    c.u8(b)[i] = code();
  int64_t na = 1, nb = f.rhsScale[0] * f.rhsScale[1];
  for (int64_t d : f.lhsScale)
    na *= d;
  for (int64_t i = 0; i < na; ++i)
    c.f32(as)[i] = scale(rng);
  for (int64_t i = 0; i < nb; ++i)
    c.f32(bs)[i] = scale(rng);
  ASSERT_EQ(c.run(infir2rt_scaled_matmul), 0);
  // Rows of the lhs (leading dimensions flattened) in blocks of lhsRows.
  auto sA = [&](int64_t i, int64_t blk) {
    return c.f32(as)[na == 1 ? 0 : (i / lhsRows) * kb + blk];
  };
  auto sB = [&](int64_t j, int64_t blk) {
    return c.f32(bs)[nb == 1 ? 0 : (j / rhsRows) * kb + blk];
  };
  int64_t mismatches = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t blk = 0; blk < kb; ++blk) {
        double partial = 0.0; // exact, and exact in FP32
        for (int64_t q = blk * bk; q < (blk + 1) * bk; ++q)
          partial += double(e4m3ToFloat(c.u8(a)[i * k + q])) *
                     e4m3ToFloat(c.u8(b)[j * k + q]);
        EXPECT_EQ(double(float(partial)), partial);
        float p = float(partial);
        acc = f.combined ? std::fma(p, sA(i, blk) * sB(j, blk), acc)
                         : std::fma(p * sA(i, blk), sB(j, blk), acc);
      }
      if (f.bf16Out) {
        uint16_t got;
        std::memcpy(&got, c.u8(y) + 2 * (i * n + j), 2);
        mismatches += got != floatToBF16(acc); // rounded once
      } else {
        mismatches += c.f32(y)[i * n + j] != acc;
      }
    }
  EXPECT_EQ(mismatches, 0) << "of " << m * n << " results";
}

INSTANTIATE_TEST_SUITE_P(
    Modes, CpuScaledMatmulBits,
    ::testing::Values(
        FoldCase{"vec_blk", {32, 512}, {1, 128, 128, 128}, {32, 4}, {2, 4},
                 true},
        FoldCase{"vec_vec", {32, 512}, {1, 128, 1, 128}, {32, 4}, {256, 4},
                 false},
        FoldCase{"blk_vec", {128, 512}, {128, 128, 1, 128}, {1, 4}, {256, 4},
                 true},
        FoldCase{"tensorwise", {32, 512}, {32, 512, 256, 512}, {1, 1}, {1, 1},
                 true},
        // The recipe's fprop: a [batch, tokens, K] lhs, BF16 out.
        FoldCase{"vec_blk_rank3_bf16", {2, 16, 512}, {1, 1, 128, 128, 128},
                 {2, 16, 4}, {2, 4}, true, true}),
    [](const ::testing::TestParamInfo<FoldCase> &info) {
      return std::string(info.param.name);
    });

} // namespace

namespace {

/// transpose against the definition, out[idx] = in[idx permuted], for the
/// tiled fast path (the last two dimensions swapped; 1, 2 and 4-byte
/// elements; sizes not multiples of the tile) and the general one.
void checkTranspose(std::vector<int64_t> shape, std::vector<int64_t> perm,
                    int64_t dtype) {
  Call c;
  std::vector<int64_t> outShape;
  for (int64_t p : perm)
    outShape.push_back(shape[p]);
  int in = c.add(shape, dtype), out = c.add(outShape, dtype);
  std::vector<double> attrs(perm.begin(), perm.end());
  c.attrs(attrs);
  int64_t size = infir2rt_dtype_size(dtype), numel = 1;
  for (int64_t d : shape)
    numel *= d;
  std::mt19937 rng(kSeed);
  for (int64_t i = 0; i < numel * size; ++i)
    c.u8(in)[i] = uint8_t(rng());
  ASSERT_EQ(c.run(infir2rt_transpose), 0);
  int64_t rank = int64_t(shape.size());
  std::vector<int64_t> idx(rank, 0), stride(rank, 1);
  for (int64_t i = rank - 2; i >= 0; --i)
    stride[i] = stride[i + 1] * shape[i + 1];
  for (int64_t flat = 0; flat < numel; ++flat) {
    int64_t src = 0, rest = flat;
    for (int64_t i = rank - 1; i >= 0; --i) { // out's index, last first
      idx[i] = rest % outShape[i];
      rest /= outShape[i];
    }
    for (int64_t i = 0; i < rank; ++i)
      src += idx[i] * stride[perm[i]];
    ASSERT_EQ(0, std::memcmp(c.u8(out) + flat * size, c.u8(in) + src * size,
                             size))
        << "element " << flat;
  }
}

TEST(CpuLayout, TransposeAgreesWithItsDefinition) {
  checkTranspose({70, 45}, {1, 0}, INFIR2RT_F32);
  checkTranspose({3, 33, 130}, {0, 2, 1}, INFIR2RT_BF16);
  checkTranspose({129, 64}, {1, 0}, INFIR2RT_E4M3);
  checkTranspose({4, 5, 6}, {1, 0, 2}, INFIR2RT_F32); // the general path
}

} // namespace
