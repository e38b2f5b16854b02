//===- CudaKernelsTest.cpp - GPU kernels against the CPU backend ----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA quantizers must reproduce the CPU backend bit for bit (which in
// turn matches the interpreter and CUDA's own conversions): same
// descriptors, same attributes, data and scales compared byte for byte. The
// cuBLASLt FP8 GEMM must agree with the CPU backend's (BLAS on exactly
// dequantized operands) to 1e-4 of each output row's RMS: both accumulate
// K = 512 products in FP32, in different orders, each off by about
// sqrt(K)·2^-24 ≈ 1.4e-6 of Σ|a·b| ≈ 14 times the RMS (up to 1.4e-5 of the
// RMS observed for the CPU against FP64, KernelsVsInterpreterTest), and the
// two errors add.
// Inputs: rows of N(0, 1) scaled by 10^U(-3, 3), F32 or BF16, seed printed.
// Without a usable GPU every test skips and says why; with one, a mismatch
// fails.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/CUDA.h"
#include "infir2/runtime/Descriptor.h"

#include "DescriptorBuilder.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using infir2::test::Call;

/// A generator from a fresh seed, printed so that a failure can be rerun.
std::mt19937_64 seededRng() {
  uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", (unsigned long long)seed);
  return std::mt19937_64(seed);
}

std::string gpuUnusable() {
  int32_t major = 0, minor = 0;
  char why[256] = {0};
  return infir2rt_cuda_probe(&major, &minor, why, sizeof why) == 0 ? "" : why;
}

using Entry = int32_t (*)(infir2rt_context *, const int64_t *, const char *);

/// The operands after `entry` ran on a host copy of them (the CPU backend).
std::vector<uint8_t> runOnCpu(const Call &c, Entry entry) {
  std::vector<uint8_t> mem = c.host;
  infir2rt_context ctx{};
  ctx.regions[0] = ctx.regions[1] = mem.data();
  int32_t rc = entry(&ctx, c.desc.data(), "cpu");
  EXPECT_EQ(rc, 0) << ctx.error;
  return mem;
}

/// The operands after `entry` ran on a device copy of them; `error` gets
/// the runtime's message when it fails.
std::vector<uint8_t> runOnGpu(const Call &c, Entry entry, int32_t &rc,
                              std::string &error) {
  std::vector<uint8_t> mem(c.host.size());
  uint8_t *device = nullptr;
  rc = 1;
  if (cudaMalloc(&device, c.host.size()) != cudaSuccess) {
    error = "cudaMalloc failed";
    return mem;
  }
  cudaMemcpy(device, c.host.data(), c.host.size(), cudaMemcpyHostToDevice);
  infir2rt_context ctx{};
  ctx.regions[0] = ctx.regions[1] = device;
  rc = entry(&ctx, c.desc.data(), "gpu");
  error = ctx.error;
  cudaMemcpy(mem.data(), device, c.host.size(), cudaMemcpyDeviceToHost);
  cudaFree(device);
  return mem;
}

/// The largest error of `got` against `want` (FP32 [rows, cols] at
/// operand `out`), relative to each row's RMS.
double worstRowError(const Call &c, int out, const std::vector<uint8_t> &want,
                     const std::vector<uint8_t> &got, int64_t rows,
                     int64_t cols) {
  const float *w =
      reinterpret_cast<const float *>(want.data() + c.operands[out].first);
  const float *g =
      reinterpret_cast<const float *>(got.data() + c.operands[out].first);
  double worst = 0.0;
  for (int64_t i = 0; i < rows; ++i) {
    double rms = 0.0, err = 0.0;
    for (int64_t j = 0; j < cols; ++j) {
      rms += double(w[i * cols + j]) * w[i * cols + j];
      err = std::max(err, std::fabs(double(g[i * cols + j]) - w[i * cols + j]));
    }
    worst = std::max(worst, err / std::sqrt(rms / double(cols)));
  }
  return worst;
}

/// Expects operands `first`.. of `c` to hold the same bytes in `a` and `b`.
void expectSameBytes(const Call &c, size_t first, const std::vector<uint8_t> &a,
                     const std::vector<uint8_t> &b) {
  for (size_t i = first; i < c.operands.size(); ++i) {
    auto [offset, bytes] = c.operands[i];
    int64_t mismatches = 0;
    for (int64_t k = 0; k < bytes; ++k)
      mismatches += a[offset + k] != b[offset + k];
    EXPECT_EQ(mismatches, 0) << "operand " << i;
  }
}

/// Runs `entry` on the CPU (cpu) and on the GPU (gpu) over copies of `c`'s
/// operands and compares the outputs (operands 1..) byte for byte.
void compare(Call &c, Entry cpu, Entry gpu) {
  std::vector<uint8_t> onCpu = runOnCpu(c, cpu);
  int32_t rc;
  std::string error;
  std::vector<uint8_t> onGpu = runOnGpu(c, gpu, rc, error);
  ASSERT_EQ(rc, 0) << error;
  expectSameBytes(c, 1, onCpu, onGpu);
}

void fill(Call &c, int operand, int64_t dtype, int64_t rows, int64_t cols,
          std::mt19937_64 &rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> exponent(-3.0f, 3.0f);
  uint8_t *p = c.host.data() + c.operands[operand].first;
  for (int64_t r = 0; r < rows; ++r) {
    float scale = std::pow(10.0f, exponent(rng));
    for (int64_t k = 0; k < cols; ++k) {
      float v = normal(rng) * scale;
      if (dtype == INFIR2RT_F32) {
        std::memcpy(p + 4 * (r * cols + k), &v, 4);
      } else {
        uint32_t u;
        std::memcpy(&u, &v, 4);
        uint16_t h = uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        std::memcpy(p + 2 * (r * cols + k), &h, 2);
      }
    }
  }
}

struct Variant {
  int64_t dtype;
  bool e5m2, pow2;
};

void PrintTo(const Variant &v, std::ostream *os) {
  *os << (v.dtype == INFIR2RT_F32 ? "f32" : "bf16")
      << (v.e5m2 ? " e5m2" : " e4m3") << (v.pow2 ? " pow2" : " fp32");
}

class CudaQuantize : public ::testing::TestWithParam<Variant> {};

TEST_P(CudaQuantize, DualMatchesTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  Variant v = GetParam();
  std::mt19937_64 rng = seededRng();
  // A [2, 256, 384] activation: 1x128 row groups, and the [384, 512]
  // column-wise copy in 1x128 groups along tokens.
  Call c;
  int64_t fmt = v.e5m2 ? INFIR2RT_E5M2 : INFIR2RT_E4M3;
  int in = c.add({2, 256, 384}, v.dtype);
  c.add({2, 256, 384}, fmt);
  c.add({2, 256, 3}, INFIR2RT_F32);
  c.add({384, 512}, fmt);
  c.add({384, 4}, INFIR2RT_F32);
  c.attrs({v.e5m2 ? 1.0 : 0.0, v.pow2 ? 1.0 : 0.0, 1, 1, 128, 1, 128});
  fill(c, in, v.dtype, 512, 384, rng);
  compare(c, infir2rt_quantize_dual, infir2rt_cuda_quantize_dual);
}

TEST_P(CudaQuantize, BlocksMatchTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  Variant v = GetParam();
  std::mt19937_64 rng = seededRng();
  // A [384, 512] weight in 128x128 blocks.
  Call c;
  int in = c.add({384, 512}, v.dtype);
  c.add({384, 512}, v.e5m2 ? INFIR2RT_E5M2 : INFIR2RT_E4M3);
  c.add({3, 4}, INFIR2RT_F32);
  c.attrs({v.e5m2 ? 1.0 : 0.0, v.pow2 ? 1.0 : 0.0, 128, 128});
  fill(c, in, v.dtype, 384, 512, rng);
  compare(c, infir2rt_quantize, infir2rt_cuda_quantize);
}

INSTANTIATE_TEST_SUITE_P(Variants, CudaQuantize,
                         ::testing::Values(Variant{INFIR2RT_F32, false, true},
                                           Variant{INFIR2RT_BF16, false, true},
                                           Variant{INFIR2RT_BF16, true, true},
                                           Variant{INFIR2RT_F32, false, false}),
                         [](const ::testing::TestParamInfo<Variant> &info) {
                           const Variant &v = info.param;
                           return std::string(v.dtype == INFIR2RT_F32
                                                  ? "f32"
                                                  : "bf16") +
                                  (v.e5m2 ? "_e5m2" : "_e4m3") +
                                  (v.pow2 ? "_pow2" : "_fp32");
                         });

// amax and dequantize are exact operations: byte-identical to the CPU.
TEST(CudaFP8, AmaxAndDequantizeMatchTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  {
    Call c;
    int in = c.add({256, 384}, INFIR2RT_BF16);
    c.add({2, 3}, INFIR2RT_F32);
    c.attrs({128, 128});
    fill(c, in, INFIR2RT_BF16, 256, 384, rng);
    compare(c, infir2rt_amax, infir2rt_cuda_amax);
  }
  {
    Call q;
    int in = q.add({256, 384}, INFIR2RT_F32),
        data = q.add({256, 384}, INFIR2RT_E4M3),
        scale = q.add({256, 3}, INFIR2RT_F32);
    q.attrs({0.0, 1.0, 1, 128});
    fill(q, in, INFIR2RT_F32, 256, 384, rng);
    std::vector<uint8_t> quantized = runOnCpu(q, infir2rt_quantize);
    Call c;
    int d = c.add({256, 384}, INFIR2RT_E4M3), s = c.add({256, 3}, INFIR2RT_F32);
    c.add({256, 384}, INFIR2RT_F32);
    c.attrs({1, 128});
    std::memcpy(c.host.data() + c.operands[d].first,
                quantized.data() + q.operands[data].first, 256 * 384);
    std::memcpy(c.host.data() + c.operands[s].first,
                quantized.data() + q.operands[scale].first, 256 * 3 * 4);
    compare(c, infir2rt_dequantize, infir2rt_cuda_dequantize);
  }
}

TEST(CudaQuantizeErrors, NonFiniteBlockIsRefused) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  Call c;
  int in = c.add({2, 256}, INFIR2RT_F32);
  c.add({2, 256}, INFIR2RT_E4M3);
  c.add({2, 2}, INFIR2RT_F32);
  c.attrs({0.0, 1.0, 1, 128});
  float *x = reinterpret_cast<float *>(c.host.data() + c.operands[in].first);
  for (int i = 0; i < 512; ++i)
    x[i] = 0.5f;
  x[256 + 130] = NAN; // row 1, second group: scale block 3
  int32_t rc;
  std::string error;
  runOnGpu(c, infir2rt_cuda_quantize, rc, error);
  EXPECT_NE(rc, 0);
  // The CPU backend's message (KernelsVsInterpreterTest checks the CPU's).
  EXPECT_EQ(error, "gpu: non-finite amax (nan) in scale block 3: refusing to "
                   "quantize it");
}

struct GemmVariant {
  const char *name;
  std::vector<double> blocks; // lhs block then rhs block
  std::vector<int64_t> lhsScale, rhsScale;
};

void PrintTo(const GemmVariant &v, std::ostream *os) { *os << v.name; }

class CudaScaledMatmul : public ::testing::TestWithParam<GemmVariant> {};

TEST_P(CudaScaledMatmul, MatchesTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  const GemmVariant &v = GetParam();
  std::mt19937_64 rng = seededRng();
  // lhs [256, 512] and rhs [384, 512], quantized on the CPU, then one GEMM
  // on each side.
  Call q1, q2;
  int x = q1.add({256, 512}, INFIR2RT_F32),
      xq = q1.add({256, 512}, INFIR2RT_E4M3),
      xs = q1.add(v.lhsScale, INFIR2RT_F32);
  std::vector<double> a1 = {0.0, 1.0, v.blocks[0], v.blocks[1]};
  q1.attrs(a1);
  int w = q2.add({384, 512}, INFIR2RT_F32),
      wq = q2.add({384, 512}, INFIR2RT_E4M3),
      ws = q2.add(v.rhsScale, INFIR2RT_F32);
  q2.attrs({0.0, 1.0, v.blocks[2], v.blocks[3]});
  fill(q1, x, INFIR2RT_F32, 256, 512, rng);
  fill(q2, w, INFIR2RT_F32, 384, 512, rng);
  infir2rt_context ctx{};
  ctx.regions[0] = ctx.regions[1] = q1.host.data();
  ASSERT_EQ(infir2rt_quantize(&ctx, q1.desc.data(), "q"), 0) << ctx.error;
  ctx.regions[0] = ctx.regions[1] = q2.host.data();
  ASSERT_EQ(infir2rt_quantize(&ctx, q2.desc.data(), "q"), 0) << ctx.error;

  Call mm;
  int a = mm.add({256, 512}, INFIR2RT_E4M3),
      as = mm.add(v.lhsScale, INFIR2RT_F32),
      b = mm.add({384, 512}, INFIR2RT_E4M3),
      bs = mm.add(v.rhsScale, INFIR2RT_F32),
      y = mm.add({256, 384}, INFIR2RT_F32);
  mm.attrs(v.blocks);
  auto copy = [](Call &to, int ti, Call &from, int fi) {
    std::memcpy(to.host.data() + to.operands[ti].first,
                from.host.data() + from.operands[fi].first,
                from.operands[fi].second);
  };
  copy(mm, a, q1, xq);
  copy(mm, as, q1, xs);
  copy(mm, b, q2, wq);
  copy(mm, bs, q2, ws);

  std::vector<uint8_t> onCpu = runOnCpu(mm, infir2rt_scaled_matmul);
  int32_t rc;
  std::string error;
  std::vector<uint8_t> onGpu =
      runOnGpu(mm, infir2rt_cuda_scaled_matmul, rc, error);
  ASSERT_EQ(rc, 0) << error;
  double worst = worstRowError(mm, y, onCpu, onGpu, 256, 384);
  EXPECT_LE(worst, 1e-4) << "worst error relative to its row's RMS";
}

INSTANTIATE_TEST_SUITE_P(
    Modes, CudaScaledMatmul,
    ::testing::Values(
        // fprop: 1x128 activations, 128x128 weights (VEC128 x BLK128x128).
        GemmVariant{"vec_blk", {1, 128, 128, 128}, {256, 4}, {3, 4}},
        // wgrad: both operands in 1x128 groups (VEC128 x VEC128).
        GemmVariant{"vec_vec", {1, 128, 1, 128}, {256, 4}, {384, 4}},
        // tensorwise: one scale per operand (scalar mode).
        GemmVariant{"tensorwise", {256, 512, 384, 512}, {1, 1}, {1, 1}}),
    [](const ::testing::TestParamInfo<GemmVariant> &info) {
      return std::string(info.param.name);
    });

/// Runs `cpu` and `gpu` on copies of `c` and compares output operand `out`
/// (F32 or BF16 of `numel` elements) within `ulps` units in the last place:
/// of each element, or (normwise, for sums that may cancel to ~0) of the
/// largest element.
void compareClose(Call &c, int out, int64_t dtype, int64_t numel, int ulps,
                  Entry cpu, Entry gpu, bool normwise = false) {
  std::vector<uint8_t> onCpu = runOnCpu(c, cpu);
  int32_t rc;
  std::string error;
  std::vector<uint8_t> onGpu = runOnGpu(c, gpu, rc, error);
  ASSERT_EQ(rc, 0) << error;
  auto value = [&](const std::vector<uint8_t> &mem, int64_t i) {
    const uint8_t *p = mem.data() + c.operands[out].first;
    if (dtype == INFIR2RT_F32) {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      return f;
    }
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  // One ulp of the result type at the value's magnitude.
  float ulp = dtype == INFIR2RT_F32 ? 0x1p-23f : 0x1p-7f;
  float largest = 0.0f;
  for (int64_t i = 0; i < numel; ++i)
    largest = std::max(largest, std::fabs(value(onCpu, i)));
  int64_t bad = 0;
  for (int64_t i = 0; i < numel; ++i) {
    float a = value(onCpu, i), b = value(onGpu, i);
    float magnitude = normwise ? largest : std::fabs(a);
    bad += std::fabs(a - b) > ulps * ulp * std::max(magnitude, 1e-30f);
  }
  EXPECT_EQ(bad, 0) << "elements beyond " << ulps << " ulp";
}

TEST(CudaElementwise, MatchTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  struct Case {
    const char *name;
    Entry cpu, gpu;
    int inputs;
    std::vector<int64_t> rhs;
  };
  for (const Case &k :
       {Case{"copy", infir2rt_copy, infir2rt_cuda_copy, 1, {}},
        Case{"add", infir2rt_add, infir2rt_cuda_add, 2, {384}},
        Case{"mul", infir2rt_mul, infir2rt_cuda_mul, 2, {384}},
        Case{"silu", infir2rt_silu, infir2rt_cuda_silu, 1, {}},
        Case{"swiglu", infir2rt_swiglu, infir2rt_cuda_swiglu, 2, {64, 384}}}) {
    SCOPED_TRACE(k.name);
    Call c;
    int a = c.add({64, 384}, INFIR2RT_F32);
    fill(c, a, INFIR2RT_F32, 64, 384, rng);
    if (k.inputs == 2) {
      int b = c.add(k.rhs, INFIR2RT_BF16);
      fill(c, b, INFIR2RT_BF16, k.rhs.size() == 2 ? 64 : 1, 384, rng);
    }
    int out = c.add({64, 384}, INFIR2RT_BF16);
    compareClose(c, out, INFIR2RT_BF16, 64 * 384, 1, k.cpu, k.gpu);
  }
}

TEST(CudaElementwise, RmsNormMatchesTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  Call c;
  int x = c.add({128, 896}, INFIR2RT_BF16), w = c.add({896}, INFIR2RT_BF16);
  int out = c.add({128, 896}, INFIR2RT_F32);
  c.attrs({1e-6});
  fill(c, x, INFIR2RT_BF16, 128, 896, rng);
  fill(c, w, INFIR2RT_BF16, 1, 896, rng);
  // FP32 sums of 896 squares in two orders: a few ulps.
  compareClose(c, out, INFIR2RT_F32, 128 * 896, 64, infir2rt_rms_norm,
               infir2rt_cuda_rms_norm);
}

TEST(CudaElementwise, AdamWMatchesTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  Call c;
  int n = 4096;
  int p = c.add({n}, INFIR2RT_F32), g = c.add({n}, INFIR2RT_F32),
      m = c.add({n}, INFIR2RT_F32), v = c.add({n}, INFIR2RT_F32);
  int lr = c.add({}, INFIR2RT_F32), step = c.add({}, INFIR2RT_F32),
      gs = c.add({}, INFIR2RT_F32), gn = c.add({}, INFIR2RT_F32);
  int np = c.add({n}, INFIR2RT_F32);
  c.add({n}, INFIR2RT_F32);
  c.add({n}, INFIR2RT_F32);
  c.attrs({0.9, 0.95, 1e-8, 0.1, 1.0});
  for (int o : {p, g, m})
    fill(c, o, INFIR2RT_F32, 1, n, rng);
  fill(c, v, INFIR2RT_F32, 1, n, rng);
  float *vv = reinterpret_cast<float *>(c.host.data() + c.operands[v].first);
  for (int i = 0; i < n; ++i)
    vv[i] = std::fabs(vv[i]);
  auto scalar = [&](int o, float x) {
    std::memcpy(c.host.data() + c.operands[o].first, &x, 4);
  };
  scalar(lr, 1e-3f);
  scalar(step, 7.0f);
  scalar(gs, 0.5f);
  scalar(gn, 3.0f);
  compareClose(c, np, INFIR2RT_F32, n, 8, infir2rt_adamw, infir2rt_cuda_adamw);
}

// infir2.matmul's forms (the transposes autodiff emits, a batched lhs with a
// shared weight), BF16 in, FP32 out, against the CPU backend's BLAS GEMM on
// the same BF16 values: both accumulate in FP32, so within 1e-4 of each
// output row's RMS (K = 512; the reasoning of the FP8 GEMM's bound above).
TEST(CudaMatmul, FormsMatchTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  struct Form {
    bool ta, tb;
  };
  for (Form f : {Form{false, true}, Form{false, false}, Form{true, false}}) {
    SCOPED_TRACE(std::string("transpose_lhs=") + (f.ta ? "1" : "0") +
                 " transpose_rhs=" + (f.tb ? "1" : "0"));
    const int64_t B = 2, M = 128, K = 512, N = 256;
    Call c;
    std::vector<int64_t> lhs =
        f.ta ? std::vector<int64_t>{B, K, M} : std::vector<int64_t>{B, M, K};
    std::vector<int64_t> rhs =
        f.tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N};
    int a = c.add(lhs, INFIR2RT_BF16), b = c.add(rhs, INFIR2RT_BF16);
    int y = c.add({B, M, N}, INFIR2RT_F32);
    c.attrs({f.ta ? 1.0 : 0.0, f.tb ? 1.0 : 0.0});
    fill(c, a, INFIR2RT_BF16, B * M, K, rng);
    fill(c, b, INFIR2RT_BF16, N, K, rng);
    std::vector<uint8_t> onCpu = runOnCpu(c, infir2rt_matmul);
    int32_t rc;
    std::string error;
    std::vector<uint8_t> onGpu = runOnGpu(c, infir2rt_cuda_matmul, rc, error);
    ASSERT_EQ(rc, 0) << error;
    double worst = worstRowError(c, y, onCpu, onGpu, B * M, N);
    EXPECT_LE(worst, 1e-4) << "worst error relative to its row's RMS";
  }
}

// Layout and reduction kernels against the CPU backend: fill, transpose and
// embedding exactly; rope (both directions) and the gradients of silu and
// swiglu within a few ulps of the largest output, not of each: they are
// differences (x·cos − y·sin, s + x·s·(1 − s)) that cancel to ~0 for some
// elements, where CUDA's FMA contraction and its expf's last ulp move the
// small result by many of its own ulps; reduce_sum within 16 ulps of its
// largest output and global_norm within 16 ulps (FP64 sums in another
// order, rounded to FP32).
TEST(CudaLayout, MatchTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  {
    SCOPED_TRACE("fill");
    Call c;
    int out = c.add({3, 100}, INFIR2RT_BF16);
    c.attrs({0.3});
    compareClose(c, out, INFIR2RT_BF16, 300, 0, infir2rt_fill,
                 infir2rt_cuda_fill);
  }
  {
    SCOPED_TRACE("transpose");
    Call c;
    int in = c.add({4, 6, 8}, INFIR2RT_F32);
    int out = c.add({8, 4, 6}, INFIR2RT_F32);
    c.attrs({2, 0, 1});
    fill(c, in, INFIR2RT_F32, 24, 8, rng);
    compareClose(c, out, INFIR2RT_F32, 192, 0, infir2rt_transpose,
                 infir2rt_cuda_transpose);
  }
  {
    SCOPED_TRACE("embedding");
    Call c;
    int table = c.add({50, 64}, INFIR2RT_BF16),
        ids = c.add({4, 16}, INFIR2RT_I32);
    int out = c.add({4, 16, 64}, INFIR2RT_BF16);
    fill(c, table, INFIR2RT_BF16, 50, 64, rng);
    int32_t *id =
        reinterpret_cast<int32_t *>(c.host.data() + c.operands[ids].first);
    for (int i = 0; i < 64; ++i)
      id[i] = int32_t(rng() % 50);
    compareClose(c, out, INFIR2RT_BF16, 4 * 16 * 64, 0, infir2rt_embedding,
                 infir2rt_cuda_embedding);
    id[37] = 50; // out of range: both refuse, naming the position
    int32_t rc;
    std::string error;
    runOnGpu(c, infir2rt_cuda_embedding, rc, error);
    EXPECT_NE(rc, 0);
    EXPECT_EQ(error, "gpu: token id 50 at position 37 is out of range [0, 50)");
  }
  for (double sign : {1.0, -1.0}) {
    SCOPED_TRACE(sign > 0 ? "rope" : "rope_grad");
    Call c;
    int x = c.add({2, 16, 256}, INFIR2RT_F32), pos = c.add({16}, INFIR2RT_I32);
    int out = c.add({2, 16, 256}, INFIR2RT_F32);
    c.attrs({64, 1e6, sign});
    fill(c, x, INFIR2RT_F32, 32, 256, rng);
    int32_t *p =
        reinterpret_cast<int32_t *>(c.host.data() + c.operands[pos].first);
    for (int i = 0; i < 16; ++i)
      p[i] = i * 97; // positions far from 0: angles that need FP64
    compareClose(c, out, INFIR2RT_F32, 2 * 16 * 256, 4, infir2rt_rope,
                 infir2rt_cuda_rope, /*normwise=*/true);
  }
  {
    SCOPED_TRACE("silu_grad");
    Call c;
    int x = c.add({64, 128}, INFIR2RT_F32), dy = c.add({64, 128}, INFIR2RT_F32);
    int out = c.add({64, 128}, INFIR2RT_F32);
    fill(c, x, INFIR2RT_F32, 64, 128, rng);
    fill(c, dy, INFIR2RT_F32, 64, 128, rng);
    compareClose(c, out, INFIR2RT_F32, 64 * 128, 8, infir2rt_silu_grad,
                 infir2rt_cuda_silu_grad, /*normwise=*/true);
  }
  {
    SCOPED_TRACE("swiglu_grad");
    Call c;
    int g = c.add({64, 128}, INFIR2RT_BF16),
        u = c.add({64, 128}, INFIR2RT_BF16),
        dy = c.add({64, 128}, INFIR2RT_BF16);
    int dg = c.add({64, 128}, INFIR2RT_F32),
        du = c.add({64, 128}, INFIR2RT_F32);
    for (int o : {g, u, dy})
      fill(c, o, INFIR2RT_BF16, 64, 128, rng);
    for (int o : {dg, du})
      compareClose(c, o, INFIR2RT_F32, 64 * 128, 8, infir2rt_swiglu_grad,
                   infir2rt_cuda_swiglu_grad, /*normwise=*/true);
  }
  {
    SCOPED_TRACE("sgd");
    Call c;
    int n = 2048;
    int p = c.add({n}, INFIR2RT_F32), g = c.add({n}, INFIR2RT_F32);
    int lr = c.add({}, INFIR2RT_F32), gs = c.add({}, INFIR2RT_F32),
        gn = c.add({}, INFIR2RT_F32);
    int np = c.add({n}, INFIR2RT_F32);
    c.attrs({0.01, 1.0});
    fill(c, p, INFIR2RT_F32, 1, n, rng);
    fill(c, g, INFIR2RT_F32, 1, n, rng);
    float values[3] = {0.05f, 0.25f, 4.0f}; // lr, 1/K, a norm that clips
    for (int k = 0; k < 3; ++k)
      std::memcpy(c.host.data() + c.operands[lr + k].first, &values[k], 4);
    (void)gs;
    (void)gn;
    compareClose(c, np, INFIR2RT_F32, n, 4, infir2rt_sgd, infir2rt_cuda_sgd);
  }
  {
    SCOPED_TRACE("reduce_sum");
    Call c;
    int x = c.add({512, 96}, INFIR2RT_F32), out = c.add({96}, INFIR2RT_F32);
    fill(c, x, INFIR2RT_F32, 512, 96, rng);
    compareClose(c, out, INFIR2RT_F32, 96, 16, infir2rt_reduce_sum,
                 infir2rt_cuda_reduce_sum, /*normwise=*/true);
  }
  {
    SCOPED_TRACE("global_norm");
    Call c;
    int g0 = c.add({300, 7}, INFIR2RT_F32), g1 = c.add({1000}, INFIR2RT_F32);
    int scale = c.add({}, INFIR2RT_F32), norm = c.add({}, INFIR2RT_F32);
    fill(c, g0, INFIR2RT_F32, 300, 7, rng);
    fill(c, g1, INFIR2RT_F32, 1, 1000, rng);
    float half = 0.5f;
    std::memcpy(c.host.data() + c.operands[scale].first, &half, 4);
    c.attrs({0.0}); // not across ranks
    compareClose(c, norm, INFIR2RT_F32, 1, 16, infir2rt_global_norm,
                 infir2rt_cuda_global_norm);
  }
}

// The loss and the gradients that reduce across tokens, against the CPU
// backend: sums in other orders (block reductions, atomics), so within a few
// ulps of each value (the loss, dx, the logits' gradient) or of the largest
// (dw and the embedding gradient, sums that may cancel).
TEST(CudaLoss, MatchTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  const int64_t T = 64, V = 300;
  auto targetsOf = [&](Call &c, int operand) {
    int32_t *t =
        reinterpret_cast<int32_t *>(c.host.data() + c.operands[operand].first);
    for (int i = 0; i < T; ++i)
      t[i] = i % 9 == 0 ? -100 : int32_t(rng() % V); // some ignored
  };
  {
    SCOPED_TRACE("cross_entropy");
    Call c;
    int logits = c.add({T, V}, INFIR2RT_F32), t = c.add({T}, INFIR2RT_I32),
        mask = c.add({T}, INFIR2RT_F32), out = c.add({}, INFIR2RT_F32);
    c.attrs({-100, 1});
    fill(c, logits, INFIR2RT_F32, T, V, rng);
    targetsOf(c, t);
    float *m =
        reinterpret_cast<float *>(c.host.data() + c.operands[mask].first);
    for (int i = 0; i < T; ++i)
      m[i] = i % 4 == 0 ? 0.0f : 1.0f;
    compareClose(c, out, INFIR2RT_F32, 1, 64, infir2rt_cross_entropy,
                 infir2rt_cuda_cross_entropy);
  }
  {
    SCOPED_TRACE("cross_entropy_grad");
    Call c;
    int logits = c.add({T, V}, INFIR2RT_BF16), t = c.add({T}, INFIR2RT_I32),
        dloss = c.add({}, INFIR2RT_F32), out = c.add({T, V}, INFIR2RT_F32);
    c.attrs({-100, 0});
    fill(c, logits, INFIR2RT_BF16, T, V, rng);
    targetsOf(c, t);
    float one = 1.0f;
    std::memcpy(c.host.data() + c.operands[dloss].first, &one, 4);
    compareClose(c, out, INFIR2RT_F32, T * V, 64, infir2rt_cross_entropy_grad,
                 infir2rt_cuda_cross_entropy_grad, /*normwise=*/true);
  }
  {
    SCOPED_TRACE("rms_norm_grad");
    Call c;
    int x = c.add({T, 256}, INFIR2RT_BF16), w = c.add({256}, INFIR2RT_BF16),
        dy = c.add({T, 256}, INFIR2RT_BF16);
    int dx = c.add({T, 256}, INFIR2RT_F32), dw = c.add({256}, INFIR2RT_F32);
    c.attrs({1e-6});
    fill(c, x, INFIR2RT_BF16, T, 256, rng);
    fill(c, w, INFIR2RT_BF16, 1, 256, rng);
    fill(c, dy, INFIR2RT_BF16, T, 256, rng);
    compareClose(c, dx, INFIR2RT_F32, T * 256, 256, infir2rt_rms_norm_grad,
                 infir2rt_cuda_rms_norm_grad, /*normwise=*/true);
    compareClose(c, dw, INFIR2RT_F32, 256, 256, infir2rt_rms_norm_grad,
                 infir2rt_cuda_rms_norm_grad, /*normwise=*/true);
  }
  {
    SCOPED_TRACE("embedding_grad");
    Call c;
    int ids = c.add({T}, INFIR2RT_I32), dy = c.add({T, 32}, INFIR2RT_F32),
        out = c.add({40, 32}, INFIR2RT_F32);
    int32_t *id =
        reinterpret_cast<int32_t *>(c.host.data() + c.operands[ids].first);
    for (int i = 0; i < T; ++i)
      id[i] = int32_t(rng() % 40); // repeated ids: accumulated rows
    fill(c, dy, INFIR2RT_F32, T, 32, rng);
    compareClose(c, out, INFIR2RT_F32, 40 * 32, 16, infir2rt_embedding_grad,
                 infir2rt_cuda_embedding_grad, /*normwise=*/true);
  }
}

// Causal GQA attention (4 query heads on 2 KV heads, head_dim 64, 2 x 96
// tokens) and its gradient against the CPU backend: FP32 dot products and
// sums in other orders (atomics for dK and dV), so within 64 ulps of the
// largest output of each tensor.
TEST(CudaAttention, MatchesTheCpuBackend) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  const int64_t B = 2, S = 96, H = 4, KV = 2, D = 64;
  std::vector<double> attrs = {double(H), double(KV), double(D), 0.125, 1.0};
  {
    SCOPED_TRACE("attention");
    Call c;
    int q = c.add({B, S, H * D}, INFIR2RT_BF16),
        k = c.add({B, S, KV * D}, INFIR2RT_BF16),
        v = c.add({B, S, KV * D}, INFIR2RT_BF16);
    int out = c.add({B, S, H * D}, INFIR2RT_F32);
    c.attrs(attrs);
    for (int o : {q, k, v})
      fill(c, o, INFIR2RT_BF16, B * S, o == q ? H * D : KV * D, rng);
    compareClose(c, out, INFIR2RT_F32, B * S * H * D, 64, infir2rt_attention,
                 infir2rt_cuda_attention, /*normwise=*/true);
  }
  {
    SCOPED_TRACE("attention_grad");
    Call c;
    int q = c.add({B, S, H * D}, INFIR2RT_F32),
        k = c.add({B, S, KV * D}, INFIR2RT_F32),
        v = c.add({B, S, KV * D}, INFIR2RT_F32),
        dout = c.add({B, S, H * D}, INFIR2RT_F32);
    int dq = c.add({B, S, H * D}, INFIR2RT_F32),
        dk = c.add({B, S, KV * D}, INFIR2RT_BF16),
        dv = c.add({B, S, KV * D}, INFIR2RT_F32);
    c.attrs(attrs);
    for (int o : {q, k, v, dout})
      fill(c, o, INFIR2RT_F32, B * S, (o == k || o == v) ? KV * D : H * D, rng);
    compareClose(c, dq, INFIR2RT_F32, B * S * H * D, 64,
                 infir2rt_attention_grad, infir2rt_cuda_attention_grad,
                 /*normwise=*/true);
    compareClose(c, dk, INFIR2RT_BF16, B * S * KV * D, 2,
                 infir2rt_attention_grad, infir2rt_cuda_attention_grad,
                 /*normwise=*/true);
    compareClose(c, dv, INFIR2RT_F32, B * S * KV * D, 64,
                 infir2rt_attention_grad, infir2rt_cuda_attention_grad,
                 /*normwise=*/true);
  }
}

// Every runtime entry point has a CUDA version: taking the address of
// infir2rt_cuda_<name> for each name in ABI.def makes a missing one a link
// error. The count catches an entry added to ABI.def by mistake. (Runs
// without a GPU.)
TEST(CudaBackend, ImplementsEveryEntryPoint) {
  std::vector<std::pair<const char *, const void *>> entries = {
#define INFIR2RT_ENTRY(name, attributes)                                       \
  {#name, reinterpret_cast<const void *>(&infir2rt_cuda_##name)},
#include "infir2/runtime/ABI.def"
  };
  EXPECT_EQ(entries.size(), 33u);
}

// The table a trainer points ctx->device at holds each entry point at its
// INFIR2RT_ENTRY_<name> index, so that the CPU-named calls of a compiled
// step reach the CUDA version of the same op. (Runs without a GPU.)
TEST(CudaBackend, EntryTableIsInAbiOrder) {
  const infir2rt_entry_fn *table = infir2rt_cuda_entries();
#define INFIR2RT_ENTRY(name, attributes)                                       \
  EXPECT_EQ(reinterpret_cast<const void *>(table[INFIR2RT_ENTRY_##name]),      \
            reinterpret_cast<const void *>(&infir2rt_cuda_##name))             \
      << #name;
#include "infir2/runtime/ABI.def"
}

// ZeRO-1's collectives alone (one rank, world size 1): the shards are the
// wholes, on both backends.
TEST(CudaBackend, ShardCollectivesAloneCopy) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  for (Entry cpu : {infir2rt_reduce_scatter, infir2rt_all_gather}) {
    Call c;
    int a = c.add({5, 3}, INFIR2RT_F32), b = c.add({7}, INFIR2RT_F32);
    c.add({5, 3}, INFIR2RT_F32);
    c.add({7}, INFIR2RT_F32);
    fill(c, a, INFIR2RT_F32, 5, 3, rng);
    fill(c, b, INFIR2RT_F32, 1, 7, rng);
    c.attrs({1.0});
    compare(c, cpu,
            cpu == infir2rt_reduce_scatter ? infir2rt_cuda_reduce_scatter
                                           : infir2rt_cuda_all_gather);
  }
}

// RMSNorm and SwiGLU with FP8 output: the fused entry point on the GPU gives
// the bytes of the producer's call followed by quantize_dual's on the GPU
// (every operand, byte for byte: the same device functions compute the
// values, and the amaxes do not depend on the order), and the CPU backend's
// fused entry gives the same high-precision result within the producers'
// tolerance (a few ulps, checked operand by operand in CudaElementwise).
TEST(CudaFused, NormAndSwigluWithFP8OutputMatchTheirTwoCalls) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng = seededRng();
  const int64_t B = 2, S = 128, K = 384, T = B * S;
  for (bool norm : {true, false}) {
    SCOPED_TRACE(norm ? "rms_norm_quantize_dual" : "swiglu_quantize_dual");
    Call c;
    int a = c.add({B, S, K}, INFIR2RT_BF16);
    int b = norm ? c.add({K}, INFIR2RT_BF16) : c.add({B, S, K}, INFIR2RT_BF16);
    c.add({B, S, K}, INFIR2RT_BF16);
    c.add({B, S, K}, INFIR2RT_E4M3);
    c.add({B, S, K / 128}, INFIR2RT_F32);
    c.add({K, T}, INFIR2RT_E4M3);
    c.add({K, T / 128}, INFIR2RT_F32);
    fill(c, a, INFIR2RT_BF16, T, K, rng);
    fill(c, b, INFIR2RT_BF16, norm ? 1 : T, K, rng);
    std::vector<double> quantize = {0.0, 1.0, 1.0, 1.0, 128.0, 1.0, 128.0};
    std::vector<double> attrs = quantize;
    if (norm)
      attrs.insert(attrs.begin(), 1e-6);
    c.attrs(attrs);
    int64_t producerAttrs = norm ? 1 : 0;

    int32_t rc = 0;
    std::string error;
    std::vector<uint8_t> fused =
        runOnGpu(c,
                 norm ? infir2rt_cuda_rms_norm_quantize_dual
                      : infir2rt_cuda_swiglu_quantize_dual,
                 rc, error);
    ASSERT_EQ(rc, 0) << error;

    Call producer = c;
    producer.desc =
        infir2::rt::subDescriptor(c.desc.data(), {0, 1, 2}, 0, producerAttrs);
    std::vector<uint8_t> mid =
        runOnGpu(producer, norm ? infir2rt_cuda_rms_norm : infir2rt_cuda_swiglu,
                 rc, error);
    ASSERT_EQ(rc, 0) << error;
    Call second = c;
    second.host = mid;
    second.desc = infir2::rt::subDescriptor(c.desc.data(), {2, 3, 4, 5, 6},
                                            producerAttrs, quantize.size());
    std::vector<uint8_t> twoCalls =
        runOnGpu(second, infir2rt_cuda_quantize_dual, rc, error);
    ASSERT_EQ(rc, 0) << error;
    expectSameBytes(c, 2, fused, twoCalls);

    std::vector<uint8_t> onCpu =
        runOnCpu(c, norm ? infir2rt_rms_norm_quantize_dual
                         : infir2rt_swiglu_quantize_dual);
    // BF16 has 8 significant bits: 2 ulps is 2^-7 relative.
    double worst = 0.0;
    for (int64_t i = 0; i < T * K; ++i) {
      auto value = [&](const std::vector<uint8_t> &mem) {
        uint16_t h;
        std::memcpy(&h, mem.data() + c.operands[2].first + 2 * i, 2);
        uint32_t u = uint32_t(h) << 16;
        float f;
        std::memcpy(&f, &u, 4);
        return double(f);
      };
      double g = value(fused), w = value(onCpu);
      double size = std::max(std::fabs(g), std::fabs(w));
      if (size > 0)
        worst = std::max(worst, std::fabs(g - w) / size);
    }
    EXPECT_LE(worst, 1.0 / 128) << "relative, GPU against CPU";
  }
}

// The all-reduce alone (no communicator): the outputs are the inputs.
TEST(CudaBackend, AllReduceAloneCopies) {
  if (std::string why = gpuUnusable(); !why.empty())
    GTEST_SKIP() << why;
  std::mt19937_64 rng(7);
  Call c;
  int a = c.add({100}, INFIR2RT_F32), b = c.add({3, 5}, INFIR2RT_F32);
  c.add({100}, INFIR2RT_F32);
  c.add({3, 5}, INFIR2RT_F32);
  fill(c, a, INFIR2RT_F32, 1, 100, rng);
  fill(c, b, INFIR2RT_F32, 3, 5, rng);
  compare(c, infir2rt_all_reduce, infir2rt_cuda_all_reduce);
}

// Runs everywhere: without a GPU the probe must say so (and not crash).
TEST(CudaProbe, AnswersWithOrWithoutAGpu) {
  int32_t major = 0, minor = 0;
  char why[256] = {0};
  int32_t rc = infir2rt_cuda_probe(&major, &minor, why, sizeof why);
  std::printf("CUDA probe: %s\n", why);
  EXPECT_NE(std::string(why), "");
  if (rc == 0) {
    EXPECT_GE(major, 1);
  }
}

} // namespace
