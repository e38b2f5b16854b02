//===- kernel-bench.cpp - CUDA kernels at the benchmark's shapes ----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// infir2-kernel-bench [attention] [quantize] [gemm]: entry points of the CUDA
// backend timed with CUDA
// events (the median of 10 calls after 3 warm-ups, each call whole: its
// memsets and host read-backs included), on random N(0, 1) inputs from a
// printed seed; one JSON line per case.
//   attention  attention and attention_grad at the benchmark models' shapes
//              (causal, BF16); FLOPs as FlashAttention counts them: forward
//              4·B·H·S²·D, halved for causal; the gradient 2.5 times that
//              (its kernels also recompute the forward: 3.5 times).
//              bench/gpu/torch_attention.py measures PyTorch's SDPA alike.
//   quantize   quantize_dual of Qwen2.5-0.5B's activations at 8 x 2048
//              tokens (BF16, 1 x 128 groups, the column-wise copy along
//              tokens) and weights (FP32, 128 x 128 blocks both ways), in
//              GB/s of the bytes read and written once.
//   gemm       the benchmark models' GEMMs as matmul (BF16) and as
//              scaled_matmul (E4M3, the recipe's block scales), TFLOP/s.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Backend.h"
#include "infir2/runtime/CUDA.h"
#include "infir2/runtime/Error.h"
#include "infir2/runtime/FP8.h"
#include "infir2/runtime/Float.h"

#include "DescriptorBuilder.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using infir2::test::Call;

namespace {

using Entry = int32_t (*)(infir2rt_context *, const int64_t *, const char *);

/// The median milliseconds of `entry` on a device copy of `c`.
double timeEntry(const Call &c, Entry entry) {
  uint8_t *device = nullptr;
  if (cudaMalloc(&device, c.host.size()) != cudaSuccess) {
    std::fprintf(stderr, "attention-bench: cudaMalloc failed\n");
    std::exit(1);
  }
  cudaMemcpy(device, c.host.data(), c.host.size(), cudaMemcpyHostToDevice);
  // A step stream of the backend's (its refusal words are freed with it).
  const infir2rt_backend *backend = infir2rt_cuda_backend();
  char why[256] = {0};
  void *handle = nullptr;
  if (backend->stream_create(&handle, why, sizeof why)) {
    std::fprintf(stderr, "kernel-bench: %s\n", why);
    std::exit(1);
  }
  cudaStream_t stream = static_cast<cudaStream_t>(handle);
  infir2rt_context ctx{};
  ctx.regions[0] = ctx.regions[1] = device;
  ctx.stream = stream;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> ms;
  for (int i = 0; i < 13; ++i) {
    cudaEventRecord(start, stream);
    if (entry(&ctx, c.desc.data(), "bench")) {
      std::fprintf(stderr, "attention-bench: %s\n",
                   infir2::rt::callError(ctx).c_str());
      std::exit(1);
    }
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    if (i >= 3)
      ms.push_back(t);
  }
  if (cudaError_t st = cudaStreamSynchronize(stream); st != cudaSuccess) {
    std::fprintf(stderr, "attention-bench: %s\n", cudaGetErrorString(st));
    std::exit(1);
  }
  cudaFree(device);
  backend->stream_destroy(handle);
  std::sort(ms.begin(), ms.end());
  return (ms[(ms.size() - 1) / 2] + ms[ms.size() / 2]) / 2;
}

/// quantize_dual of a [rows, cols] tensor of `type`, blocks (br x 128) and
/// its transpose in (bt x 128).
void quantizeCase(const char *name, int64_t rows, int64_t cols, int64_t type,
                  double br, double bt, std::mt19937_64 &rng) {
  std::normal_distribution<float> normal;
  Call c;
  int x = c.add({rows, cols}, type);
  c.add({rows, cols}, INFIR2RT_E4M3);
  c.add({br == 1 ? rows : rows / 128, cols / 128}, INFIR2RT_F32);
  c.add({cols, rows}, INFIR2RT_E4M3);
  c.add({bt == 1 ? cols : cols / 128, rows / 128}, INFIR2RT_F32);
  c.attrs({0.0, 1.0, br, 128, bt, 128});
  for (int64_t i = 0; i < rows * cols; ++i) {
    float v = normal(rng);
    if (type == INFIR2RT_F32)
      std::memcpy(c.u8(x) + 4 * i, &v, 4);
    else {
      uint16_t h = infir2::rt::floatToBF16(v);
      std::memcpy(c.u8(x) + 2 * i, &h, 2);
    }
  }
  double ms = timeEntry(c, infir2rt_cuda_quantize_dual);
  double bytes = double(rows) * cols * (infir2rt_dtype_size(type) + 2);
  const char *path = std::getenv("INFIR2_CUDA_QUANTIZE");
  std::printf("{\"quantize_dual\": \"%s\", \"rows\": %lld, \"cols\": %lld, "
              "\"path\": \"%s\", \"ms\": %.3f, \"gb_per_s\": %.0f}\n",
              name, (long long)rows, (long long)cols, path ? path : "default",
              ms, bytes / ms * 1e-6);
  std::fflush(stdout);
}

void quantizeCases(std::mt19937_64 &rng) {
  quantizeCase("activation", 16384, 896, INFIR2RT_BF16, 1, 1, rng);
  quantizeCase("activation", 16384, 4864, INFIR2RT_BF16, 1, 1, rng);
  quantizeCase("weight", 4864, 896, INFIR2RT_F32, 128, 128, rng);
  quantizeCase("weight", 896, 4864, INFIR2RT_F32, 128, 128, rng);
}

/// Random operand bytes: BF16 or FP8 codes of N(0, 1) values, FP32 scales
/// near 1 (the GEMMs' speed does not depend on them; the codes avoid NaN).
/// Values drawn from a table of 2^16 normal samples by a cheap generator:
/// the LM head's operands hold ~10^9 of them.
void fillRandom(Call &c, int i, int64_t type, std::mt19937_64 &rng) {
  std::normal_distribution<float> normal;
  std::vector<float> table(1 << 16);
  for (float &t : table)
    t = normal(rng);
  uint64_t state = rng();
  int64_t n = c.operands[i].second / infir2rt_dtype_size(type);
  uint8_t *p = c.u8(i);
  for (int64_t j = 0; j < n; ++j) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    float v = table[state >> 48];
    if (type == INFIR2RT_BF16) {
      uint16_t h = infir2::rt::floatToBF16(v);
      std::memcpy(p + 2 * j, &h, 2);
    } else if (type == INFIR2RT_F32) {
      float s = 0.5f + std::fabs(v) * 0.01f;
      std::memcpy(p + 4 * j, &s, 4);
    } else {
      p[j] = infir2::rt::floatToFP8(v, infir2::rt::FP8Format::E4M3);
    }
  }
}

/// One GEMM [M, K] x [N, K]^T -> [M, N] (bf16 out; f32 where `f32Out`),
/// as matmul (BF16 operands) and as scaled_matmul (E4M3, 1 x 128 groups
/// for the lhs and, `blockRhs`, 128 x 128 blocks or 1 x 128 groups for the
/// rhs): both times and TFLOP/s of 2·M·N·K.
void gemmCase(const char *name, int64_t M, int64_t N, int64_t K, bool f32Out,
              bool blockRhs, std::mt19937_64 &rng) {
  int64_t out = f32Out ? INFIR2RT_F32 : INFIR2RT_BF16;
  Call dense;
  fillRandom(dense, dense.add({M, K}, INFIR2RT_BF16), INFIR2RT_BF16, rng);
  fillRandom(dense, dense.add({N, K}, INFIR2RT_BF16), INFIR2RT_BF16, rng);
  dense.add({M, N}, out);
  dense.attrs({0.0, 1.0, 0.0}); // lhs [M, K], rhs [N, K], no accumulator
  double bf16 = timeEntry(dense, infir2rt_cuda_matmul);
  Call fp8;
  fillRandom(fp8, fp8.add({M, K}, INFIR2RT_E4M3), INFIR2RT_E4M3, rng);
  fillRandom(fp8, fp8.add({M, K / 128}, INFIR2RT_F32), INFIR2RT_F32, rng);
  fillRandom(fp8, fp8.add({N, K}, INFIR2RT_E4M3), INFIR2RT_E4M3, rng);
  fillRandom(fp8, fp8.add({blockRhs ? N / 128 : N, K / 128}, INFIR2RT_F32),
             INFIR2RT_F32, rng);
  fp8.add({M, N}, out);
  fp8.attrs({1.0, 128.0, blockRhs ? 128.0 : 1.0, 128.0, 0.0});
  double scaled = timeEntry(fp8, infir2rt_cuda_scaled_matmul);
  double flops = 2.0 * double(M) * double(N) * double(K);
  std::printf("{\"gemm\": \"%s\", \"m\": %lld, \"n\": %lld, \"k\": %lld, "
              "\"out\": \"%s\", \"rhs_scales\": \"%s\", \"bf16_ms\": %.3f, "
              "\"fp8_ms\": %.3f, \"bf16_tflops\": %.1f, "
              "\"fp8_tflops\": %.1f}\n",
              name, (long long)M, (long long)N, (long long)K,
              f32Out ? "f32" : "bf16", blockRhs ? "128x128" : "1x128", bf16,
              scaled, flops / bf16 * 1e-9, flops / scaled * 1e-9);
  std::fflush(stdout);
}

/// The benchmark models' GEMMs: Qwen2.5-0.5B at 8 x 2048 tokens (the LM
/// head at 4 x 1024, its FP32 logits being 2.5 GB there), and Qwen2.5-7B's
/// widths at 2 x 4096: forward (weights in 128 x 128 blocks) and weight
/// gradients (both operands in 1 x 128 groups along the tokens, FP32 out).
void gemmCases(std::mt19937_64 &rng) {
  gemmCase("0.5b q/o fprop", 16384, 896, 896, false, true, rng);
  gemmCase("0.5b k/v fprop", 16384, 128, 896, false, true, rng);
  gemmCase("0.5b gate/up fprop", 16384, 4864, 896, false, true, rng);
  gemmCase("0.5b down fprop", 16384, 896, 4864, false, true, rng);
  gemmCase("0.5b gate wgrad", 4864, 896, 16384, true, false, rng);
  gemmCase("0.5b lm-head fprop", 4096, 151936, 896, true, true, rng);
  gemmCase("0.5b lm-head wgrad", 151936, 896, 4096, true, false, rng);
  gemmCase("7b q/o fprop", 8192, 3584, 3584, false, true, rng);
  gemmCase("7b gate/up fprop", 8192, 18944, 3584, false, true, rng);
  gemmCase("7b down fprop", 8192, 3584, 18944, false, true, rng);
  gemmCase("7b gate wgrad", 18944, 3584, 8192, true, false, rng);
}

} // namespace

int main(int argc, char **argv) {
  // Which cases: "attention", "quantize", "gemm" (default all).
  auto wanted = [&](const char *what) {
    if (argc < 2)
      return true;
    for (int i = 1; i < argc; ++i)
      if (std::strcmp(argv[i], what) == 0)
        return true;
    return false;
  };
  int32_t major = 0, minor = 0;
  char why[256] = {0};
  if (infir2rt_cuda_probe(&major, &minor, why, sizeof why)) {
    std::printf("attention-bench: no usable GPU: %s\n", why);
    return 0;
  }
  uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  if (wanted("quantize"))
    quantizeCases(rng);
  if (wanted("gemm"))
    gemmCases(rng);
  if (!wanted("attention"))
    return 0;
  struct Shape {
    const char *name;
    int64_t batch, seq, heads, kvHeads, hd;
  } shapes[] = {{"qwen-110m", 8, 1024, 16, 4, 64},
                {"qwen2.5-0.5b", 8, 2048, 14, 2, 64},
                {"qwen2.5-7b", 2, 4096, 28, 4, 128}};
  for (const Shape &s : shapes) {
    int64_t qw = s.heads * s.hd, kw = s.kvHeads * s.hd;
    std::vector<double> attrs = {double(s.heads), double(s.kvHeads),
                                 double(s.hd), 1.0 / std::sqrt(double(s.hd)),
                                 1.0, 0.0};
    auto fill = [&](Call &c, int i) {
      auto *p = reinterpret_cast<uint16_t *>(c.u8(i));
      for (int64_t j = 0; j < c.operands[i].second / 2; ++j)
        p[j] = infir2::rt::floatToBF16(normal(rng));
    };
    Call fwd;
    int q = fwd.add({s.batch, s.seq, qw}, INFIR2RT_BF16),
        k = fwd.add({s.batch, s.seq, kw}, INFIR2RT_BF16),
        v = fwd.add({s.batch, s.seq, kw}, INFIR2RT_BF16);
    fwd.add({s.batch, s.seq, qw}, INFIR2RT_BF16);
    fwd.attrs(attrs);
    for (int i : {q, k, v})
      fill(fwd, i);
    Call bwd;
    for (int64_t w : {qw, kw, kw, qw})
      fill(bwd, bwd.add({s.batch, s.seq, w}, INFIR2RT_BF16));
    for (int64_t w : {qw, kw, kw})
      bwd.add({s.batch, s.seq, w}, INFIR2RT_BF16);
    bwd.attrs(attrs);
    double flops =
        4.0 * s.batch * s.heads * double(s.seq) * s.seq * s.hd / 2.0;
    double f = timeEntry(fwd, infir2rt_cuda_attention),
           b = timeEntry(bwd, infir2rt_cuda_attention_grad);
    std::printf("{\"shape\": \"%s\", \"batch\": %lld, \"seq\": %lld, "
                "\"forward_ms\": %.3f, \"backward_ms\": %.3f, "
                "\"forward_tflops\": %.1f, \"backward_tflops\": %.1f}\n",
                s.name, (long long)s.batch, (long long)s.seq, f, b,
                flops / f * 1e-9, 2.5 * flops / b * 1e-9);
    std::fflush(stdout);
  }
  return 0;
}
