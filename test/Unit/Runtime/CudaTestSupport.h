//===- CudaTestSupport.h - The GPU tests' harness ---------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// What the GPU tests share: running an entry point on a host copy of a call's
// operands (the CPU backend) and on a device copy (the CUDA backend), and
// comparing the two byte for byte, within ulps, or within a fraction of each
// row's RMS. Inputs: rows of N(0, 1) scaled by 10^U(-3, 3), F32 or BF16,
// seed printed. Without a usable GPU every test skips and says why; with one,
// a mismatch fails.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TEST_UNIT_RUNTIME_CUDATESTSUPPORT_H
#define INFIR2_TEST_UNIT_RUNTIME_CUDATESTSUPPORT_H

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Backend.h"
#include "infir2/runtime/CUDA.h"
#include "infir2/runtime/Error.h"
#include "infir2/runtime/Float.h"

#include "DescriptorBuilder.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace infir2::test {

/// A generator from a fresh seed, printed so that a failure can be rerun.
inline std::mt19937_64 seededRng() {
  uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", (unsigned long long)seed);
  return std::mt19937_64(seed);
}

inline std::string gpuUnusable() {
  int32_t major = 0, minor = 0;
  char why[256] = {0};
  return infir2rt_cuda_probe(&major, &minor, why, sizeof why) == 0 ? "" : why;
}

/// Why the 128-wide block-scaled FP8 GEMMs cannot run here: no usable GPU,
/// or one that is not Hopper (Blackwell has MXFP8 instead: CudaMxfp8Test).
inline std::string blockScaledGemmsUnusable() {
  int32_t major = 0, minor = 0;
  char why[256] = {0};
  if (infir2rt_cuda_probe(&major, &minor, why, sizeof why) != 0)
    return why;
  if (major != 9)
    return std::string(why) + ": 128-wide block-scaled FP8 GEMMs are "
                              "Hopper's (compute capability 9.0)";
  return "";
}

using Entry = int32_t (*)(infir2rt_context *, const int64_t *, const char *);

/// The operands after `entry` ran on a host copy of them (the CPU backend).
inline std::vector<uint8_t> runOnCpu(const Call &c, Entry entry) {
  std::vector<uint8_t> mem = c.host;
  infir2rt_context ctx{};
  ctx.regions[0] = ctx.regions[1] = mem.data();
  int32_t rc = entry(&ctx, c.desc.data(), "cpu");
  EXPECT_EQ(rc, 0) << infir2::rt::callError(ctx);
  return mem;
}

/// The operands after `entry` ran on a device copy of them; `error` gets
/// the runtime's message when it fails.
inline std::vector<uint8_t> runOnGpu(const Call &c, Entry entry, int32_t &rc,
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
  error = infir2::rt::callError(ctx);
  cudaMemcpy(mem.data(), device, c.host.size(), cudaMemcpyDeviceToHost);
  cudaFree(device);
  return mem;
}

/// Runs `entry` on device copies of `calls`, in order, on one step stream
/// of the CUDA backend (each call returns 0: a refusal waits for the
/// stream's read-back, Deferred.h), then waits for the stream: its status,
/// with "where: message" in `why`. Then the words must have been reset:
/// calls[0] (one the entry accepts) runs again, and that wait finds
/// nothing.
inline int32_t runOnStepStream(const std::vector<Call> &calls,
                               const std::vector<Entry> &entries,
                               const std::vector<const char *> &where,
                               std::string &why) {
  const infir2rt_backend *backend = infir2rt_cuda_backend();
  char message[512] = {0};
  void *stream = nullptr;
  if (backend->stream_create(&stream, message, sizeof message)) {
    why = message;
    return -1;
  }
  std::vector<uint8_t *> device(calls.size(), nullptr);
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(cudaMalloc(&device[i], calls[i].host.size()), cudaSuccess);
    cudaMemcpy(device[i], calls[i].host.data(), calls[i].host.size(),
               cudaMemcpyHostToDevice);
    infir2rt_context ctx{};
    ctx.regions[0] = ctx.regions[1] = device[i];
    ctx.stream = stream;
    EXPECT_EQ(entries[i](&ctx, calls[i].desc.data(), where[i]), 0)
        << infir2::rt::callError(ctx);
  }
  int32_t rc = backend->synchronize(stream, message, sizeof message);
  why = message;
  infir2rt_context again{};
  again.regions[0] = again.regions[1] = device[0];
  again.stream = stream;
  EXPECT_EQ(entries[0](&again, calls[0].desc.data(), where[0]), 0);
  EXPECT_EQ(backend->synchronize(stream, message, sizeof message), 0)
      << message;
  for (uint8_t *d : device)
    cudaFree(d);
  backend->stream_destroy(stream);
  return rc;
}

/// runOnStepStream with one entry point for every call.
inline int32_t runOnStepStream(const std::vector<Call> &calls, Entry entry,
                               const std::vector<const char *> &where,
                               std::string &why) {
  return runOnStepStream(calls, std::vector<Entry>(calls.size(), entry), where,
                         why);
}

/// The largest error of `got` against `want` (FP32 [rows, cols] at
/// operand `out`), relative to each row's RMS.
inline double worstRowError(const Call &c, int out,
                            const std::vector<uint8_t> &want,
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

/// The largest error of `out`, an [M, N] product of `a` [M, K] and `b`
/// [N, K] (dequantized FP8 operands), against the exact FP64 product: each
/// element's error relative to its Σ|a·b|, the scale of any summation error.
inline double errorVsExactProduct(const float *out,
                                  const std::vector<double> &a,
                                  const std::vector<double> &b, int64_t M,
                                  int64_t N, int64_t K) {
  double worst = 0.0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double exact = 0.0, magnitude = 0.0;
      for (int64_t k = 0; k < K; ++k) {
        exact += a[i * K + k] * b[j * K + k];
        magnitude += std::fabs(a[i * K + k] * b[j * K + k]);
      }
      worst = std::max(worst, std::fabs(out[i * N + j] - exact) / magnitude);
    }
  return worst;
}

/// Expects operands `first`.. of `c` to hold the same bytes in `a` and `b`.
inline void expectSameBytes(const Call &c, size_t first,
                            const std::vector<uint8_t> &a,
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
inline void compare(Call &c, Entry cpu, Entry gpu) {
  std::vector<uint8_t> onCpu = runOnCpu(c, cpu);
  int32_t rc;
  std::string error;
  std::vector<uint8_t> onGpu = runOnGpu(c, gpu, rc, error);
  ASSERT_EQ(rc, 0) << error;
  expectSameBytes(c, 1, onCpu, onGpu);
}

inline void fill(Call &c, int operand, int64_t dtype, int64_t rows,
                 int64_t cols, std::mt19937_64 &rng) {
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
        uint16_t h = infir2::rt::floatToBF16(v);
        std::memcpy(p + 2 * (r * cols + k), &h, 2);
      }
    }
  }
}

/// Runs `cpu` and `gpu` on copies of `c` and compares output operand `out`
/// (F32 or BF16 of `numel` elements) within `ulps` units in the last place:
/// of each element, or (normwise, for sums that may cancel to ~0) of the
/// largest element.
inline void compareClose(Call &c, int out, int64_t dtype, int64_t numel,
                         int ulps, Entry cpu, Entry gpu,
                         bool normwise = false) {
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
    return infir2::rt::bf16ToFloat(h);
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

} // namespace infir2::test

#endif // INFIR2_TEST_UNIT_RUNTIME_CUDATESTSUPPORT_H
