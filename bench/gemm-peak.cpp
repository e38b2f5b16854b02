//===- gemm-peak.cpp - The GEMM rates the trainer benchmarks compare to ---===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Measures, on this machine's threads, the rate of one 2048^3 GEMM in BF16
// (oneDNN's matmul, BF16 operands, FP32 accumulation and result: the
// arithmetic of the CPU backend's BF16 path) and in FP32 (OpenBLAS SGEMM),
// each repeated for a second after a warm-up; the memory bandwidth of a
// STREAM triad (a = b + s·c over 3 x 256 MiB, counted as 3 x 4 bytes per
// element), and the rates of what bounds the CPU backend's memory-light
// kernels rather than bandwidth: an exp (SwiGLU's sigmoid, softmax), the
// backend's own quantize_dual (input elements/s) and cross-entropy gradient
// (logits/s), on the OpenMP threads, and by shape the BF16 GEMM and the
// backend's emulated FP8 GEMM (scaled_matmul). bench/trainer-throughput.sh
// takes the BF16 rate as the hardware limit; infir2-compile
// --report-step-time=cpu reads the --json form.
//
//   --quick times each rate for a fiftieth of that (rough rates: a test).
//
//   infir2-gemm-peak [SIZE]         prints "bf16: G GFLOP/s (isa)",
//                                   "fp32: G GFLOP/s" and "bandwidth: B GB/s"
//   infir2-gemm-peak --json [SIZE]  {"bf16_gflops": G, "fp32_gflops": G,
//                                    "bandwidth_gbs": B, "exp_gops": E,
//                                    "quantize_gops": Q, "loss_gops": L,
//                                    "size": SIZE,
//                                    "gemms": [[M, N, K, BF16 GFLOP/s,
//                                               FP8 GFLOP/s], ...]}
//
//===----------------------------------------------------------------------===//

#include "DescriptorBuilder.h"
#include "infir2/runtime/ABI.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

namespace {

/// What --quick multiplies each timing's length by.
double timeScale = 1.0;

/// G operations/s of `fn`, doing `ops` each call: the best of three runs of
/// `seconds` / 3 each after a warm-up call (on a shared machine, the best
/// is the rate the hardware gives; a neighbour's burst only lowers one).
template <typename Fn> double gflops(Fn fn, double ops, double seconds = 1.0) {
  fn();
  double best = 0;
  for (int trial = 0; trial < 3; ++trial) {
    auto start = std::chrono::steady_clock::now();
    int n = 0;
    double elapsed;
    do {
      fn();
      ++n;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                              start)
                    .count();
    } while (elapsed < seconds * timeScale / 3);
    best = std::max(best, ops * n / elapsed / 1e9);
  }
  return best;
}

/// GFLOP/s of oneDNN's BF16 matmul [m, k] x [k, n] -> FP32 [m, n] (the CPU
/// backend's BF16 path); `isa` names its implementation.
double bf16Rate(long m, long n, long k, double seconds,
                std::string *isa = nullptr) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::vector<uint16_t> a(m * k, 0x3f00), b(k * n, 0x3e80); // 0.5, 0.25
  std::vector<float> c(m * n);
  dnnl::memory::desc ad({m, k}, dt::bf16, tag::ab),
      bd({k, n}, dt::bf16, tag::ab), cd({m, n}, dt::f32, tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, cd), engine);
  dnnl::matmul mm(pd);
  dnnl::memory am(ad, engine, a.data()), bm(bd, engine, b.data()),
      cm(cd, engine, c.data());
  if (isa)
    *isa = pd.impl_info_str();
  return gflops(
      [&] {
        mm.execute(stream, {{DNNL_ARG_SRC, am},
                            {DNNL_ARG_WEIGHTS, bm},
                            {DNNL_ARG_DST, cm}});
        stream.wait();
      },
      2.0 * m * n * k, seconds);
}

/// GB/s of a STREAM triad over `n` floats per array.
double triadGBs(long n) {
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  float s = 3.0f;
  auto triad = [&] {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i)
      a[i] = b[i] + s * c[i];
  };
  // Bytes as GFLOP/s counts flops: 12 per element.
  return gflops(triad, 12.0 * double(n));
}

/// G elements/s of `op` over 16 M floats in [-4, 4].
template <typename Op> double elementRate(Op op) {
  long n = 16l << 20;
  std::vector<float> x(n);
  for (long i = 0; i < n; ++i)
    x[i] = float(i % 8001) / 1000.0f - 4.0f;
  std::vector<float> y(n);
  return gflops(
      [&] {
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; ++i)
          y[i] = op(x[i]);
      },
      double(n));
}

/// Exits when a runtime call the rates time fails (they would time an
/// error's return).
void checked(int32_t rc, const char *entry) {
  if (rc != 0) {
    std::fprintf(stderr, "infir2-gemm-peak: the CPU backend's %s failed\n",
                 entry);
    std::exit(1);
  }
}

/// G input elements/s of the CPU backend's quantize_dual itself (BF16
/// [4096, 896] activations, 1 x 128 groups, both layouts: the amaxes, the
/// scales and the two encodings), through its entry point.
double quantizeRate() {
  const int64_t rows = 4096, cols = 896;
  infir2::test::Call c;
  int x = c.add({rows, cols}, INFIR2RT_BF16);
  c.add({rows, cols}, INFIR2RT_E4M3);
  c.add({rows, cols / 128}, INFIR2RT_F32);
  c.add({cols, rows}, INFIR2RT_E4M3);
  c.add({cols, rows / 128}, INFIR2RT_F32);
  c.attrs({0.0, 1.0, 1, 128, 1, 128}); // e4m3, pow2, blocks [1, 128] twice
  auto *in = reinterpret_cast<uint16_t *>(c.u8(x));
  for (int64_t i = 0; i < rows * cols; ++i)
    in[i] = uint16_t(0x3c00 + i % 1024); // BF16 values from 0.0078 to 2
  checked(c.run(infir2rt_quantize_dual), "quantize_dual");
  return gflops([&] { c.run(infir2rt_quantize_dual); }, double(rows * cols));
}

/// GFLOP/s of the CPU backend's FP8 GEMM itself, through scaled_matmul's
/// entry point: E4M3 [m, k] in 1 x 128 groups times E4M3 [n, k] in 128 x 128
/// blocks (or, for a weight-gradient GEMM, 1 x 128 groups too), power-of-two
/// scales (the recipe's), a BF16 [m, n] result. The backend emulates it:
/// it widens the codes and scales to BF16 and runs the BF16 GEMM.
double fp8Rate(long m, long n, long k, bool wgrad, double seconds) {
  infir2::test::Call c;
  int a = c.add({m, k}, INFIR2RT_E4M3), as = c.add({m, k / 128}, INFIR2RT_F32),
      b = c.add({n, k}, INFIR2RT_E4M3),
      bs = wgrad ? c.add({n, k / 128}, INFIR2RT_F32)
                 : c.add({n / 128, k / 128}, INFIR2RT_F32);
  c.add({m, n}, INFIR2RT_BF16);
  c.attrs({1, 128, wgrad ? 1.0 : 128.0, 128, 0.0}); // blocks, no accumulator
  for (auto [codes, count] : {std::pair{a, m * k}, std::pair{b, n * k}})
    for (long i = 0; i < count; ++i)
      c.u8(codes)[i] = uint8_t(0x30 + i % 64 + (i & 64 ? 0x80 : 0)); // finite
  for (auto [scale, count] :
       {std::pair{as, m * k / 128},
        std::pair{bs, (wgrad ? n * 128 : n) * k / (128 * 128)}})
    for (long i = 0; i < count; ++i)
      c.f32(scale)[i] = 0.0625f;
  checked(c.run(infir2rt_scaled_matmul), "scaled_matmul");
  return gflops([&] { c.run(infir2rt_scaled_matmul); }, 2.0 * m * n * k,
                seconds);
}

/// G logits/s of the CPU backend's cross-entropy gradient (FP32 [256,
/// 32768] logits to a BF16 gradient: a log-sum-exp and an exp per logit).
double lossRate() {
  const int64_t rows = 256, vocab = 32768;
  infir2::test::Call c;
  int logits = c.add({rows, vocab}, INFIR2RT_F32),
      targets = c.add({rows}, INFIR2RT_I32), dloss = c.add({}, INFIR2RT_F32);
  c.add({rows, vocab}, INFIR2RT_BF16);
  c.attrs({-100.0, 0.0, 0.0,
           1.0}); // ignore_index, no mask or divisor, whole vocabulary
  for (int64_t i = 0; i < rows * vocab; ++i)
    c.f32(logits)[i] = float(i % 977) / 100.0f - 5.0f;
  for (int64_t i = 0; i < rows; ++i)
    reinterpret_cast<int32_t *>(c.u8(targets))[i] = int32_t(i * 7 % vocab);
  *c.f32(dloss) = 1.0f;
  checked(c.run(infir2rt_cross_entropy_grad), "cross_entropy_grad");
  return gflops([&] { c.run(infir2rt_cross_entropy_grad); },
                double(rows * vocab));
}

} // namespace

int main(int argc, char **argv) {
  bool json = false;
  for (; argc > 1 && argv[1][0] == '-'; --argc, ++argv) {
    if (std::strcmp(argv[1], "--json") == 0)
      json = true;
    else if (std::strcmp(argv[1], "--quick") == 0)
      timeScale = 0.02;
    else {
      std::fprintf(stderr,
                   "infir2-gemm-peak: unknown option '%s' (--json, "
                   "--quick)\n",
                   argv[1]);
      return 1;
    }
  }
  long n = argc > 1 ? std::atol(argv[1]) : 2048;
  if (n <= 0 || n > 16384) {
    std::fprintf(stderr, "infir2-gemm-peak: SIZE must be in 1..16384\n");
    return 1;
  }
  double flops = 2.0 * n * n * n;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  std::string isa;
  double bf16 = bf16Rate(n, n, n, 1.0, &isa);
  double fp32 = gflops(
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                    a.data(), n, b.data(), n, 0.0f, c.data(), n);
      },
      flops);
  double bandwidth = triadGBs(64l << 20);
  double exps = elementRate([](float v) { return std::exp(v); });
  double quantize = quantizeRate(), loss = lossRate();
  if (json) {
    // The BF16 and FP8 rates at the shapes of a transformer layer's GEMMs
    // at a few hundred tokens (M = tokens), forward and weight gradient
    // (the fourth number: 1), the step-time model taking the nearest. Where
    // 128 does not divide a size, the FP8 rate written is the BF16 one.
    const long shapes[][4] = {{256, 896, 896, 0},   {256, 4864, 896, 0},
                              {256, 896, 4864, 0},  {896, 896, 256, 1},
                              {4864, 896, 256, 1},  {1024, 2048, 2048, 0},
                              {256, 32768, 896, 0}, {n, n, n, 0}};
    // %.4g: a slow build (the sanitizers') must not print a rate as 0.
    std::printf("{\"bf16_gflops\": %.4g, \"fp32_gflops\": %.4g, "
                "\"bandwidth_gbs\": %.4g, \"exp_gops\": %.4g, "
                "\"quantize_gops\": %.4g, \"loss_gops\": %.4g, "
                "\"size\": %ld, \"gemms\": [",
                bf16, fp32, bandwidth, exps, quantize, loss, n);
    for (size_t i = 0; i < std::size(shapes); ++i) {
      const long *g = shapes[i];
      double rate =
          i + 1 == std::size(shapes) ? bf16 : bf16Rate(g[0], g[1], g[2], 0.25);
      bool tiles = g[0] % 128 == 0 && g[1] % 128 == 0 && g[2] % 128 == 0;
      std::printf("%s[%ld, %ld, %ld, %.4g, %.4g]", i ? ", " : "", g[0], g[1],
                  g[2], rate,
                  tiles ? fp8Rate(g[0], g[1], g[2], g[3], 0.25) : rate);
    }
    std::printf("]}\n");
    return 0;
  }
  std::printf("bf16: %.0f GFLOP/s (oneDNN %s)\n", bf16, isa.c_str());
  std::printf("fp32: %.0f GFLOP/s (OpenBLAS SGEMM)\n", fp32);
  std::printf("bandwidth: %.1f GB/s (STREAM triad)\n", bandwidth);
  std::printf("exp: %.2f G/s, quantize_dual: %.2f G/s, cross_entropy_grad: "
              "%.2f G/s\n",
              exps, quantize, loss);
  return 0;
}
