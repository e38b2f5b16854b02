//===- gemm-peak.cpp - The GEMM rates the trainer benchmarks compare to ---===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Measures, on this machine's threads, the rate of one 2048^3 GEMM in BF16
// (oneDNN's matmul, BF16 operands, FP32 accumulation and result: the
// arithmetic of the CPU backend's BF16 path) and in FP32 (OpenBLAS SGEMM),
// each repeated for a second after a warm-up. bench/trainer-throughput.sh
// takes the BF16 rate as the hardware limit.
//
//   infir2-gemm-peak [SIZE]   prints "bf16: G GFLOP/s (isa)" and "fp32: G GFLOP/s"
//
//===----------------------------------------------------------------------===//

#include <cblas.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

template <typename Fn> double gflops(Fn fn, double flops) {
  fn();
  auto start = std::chrono::steady_clock::now();
  int n = 0;
  double elapsed;
  do {
    fn();
    ++n;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            start)
                  .count();
  } while (elapsed < 1.0);
  return flops * n / elapsed / 1e9;
}

} // namespace

int main(int argc, char **argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 2048;
  if (n <= 0 || n > 16384) {
    std::fprintf(stderr, "infir2-gemm-peak: SIZE must be in 1..16384\n");
    return 1;
  }
  double flops = 2.0 * n * n * n;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  std::vector<uint16_t> a16(n * n, 0x3f00), b16(n * n, 0x3e80); // 0.5, 0.25
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  dnnl::memory::desc ad({n, n}, dt::bf16, tag::ab), bd({n, n}, dt::bf16, tag::ab),
      cd({n, n}, dt::f32, tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, cd), engine);
  dnnl::matmul mm(pd);
  dnnl::memory am(ad, engine, a16.data()), bm(bd, engine, b16.data()),
      cm(cd, engine, c.data());
  double bf16 = gflops(
      [&] {
        mm.execute(stream, {{DNNL_ARG_SRC, am},
                            {DNNL_ARG_WEIGHTS, bm},
                            {DNNL_ARG_DST, cm}});
        stream.wait();
      },
      flops);
  std::printf("bf16: %.0f GFLOP/s (oneDNN %s)\n", bf16, pd.impl_info_str());
  double fp32 = gflops(
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                    a.data(), n, b.data(), n, 0.0f, c.data(), n);
      },
      flops);
  std::printf("fp32: %.0f GFLOP/s (OpenBLAS SGEMM)\n", fp32);
  return 0;
}
