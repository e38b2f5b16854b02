//===- Fp8LoopsTest.cpp - The CPU backend's FP8 loops, as this CPU runs them ===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The encoder and the BF16 decoder run in the build this process takes
// (AVX-512 where the CPU has it, else plain x86-64; ctest runs this binary a
// second time with INFIR2_CPU_FP8_LOOPS=plain), and must give the bits of
// the scalar conversions of FP8.h, which FP8Test checks against CUDA's for
// all 2^32 floats. Here: every 251st float (a prime stride, so every
// exponent and, cyclically, all low-bit patterns occur), both formats, both
// the scalar and the per-element factor, multiplying and dividing; the
// decoder on all 256 codes of each format times powers of two from 2^-100
// to 2^100.
//
//===----------------------------------------------------------------------===//

#include "Fp8Loops.h"

#include "infir2/runtime/FP8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace infir2::rt;

namespace {

float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

TEST(CpuFp8Loops, EncoderGivesTheScalarBits) {
  const char *v = std::getenv("INFIR2_CPU_FP8_LOOPS");
  bool plain = v && std::string(v) == "plain";
  std::printf("FP8 loops: %s build\n",
              cpu::fp8LoopsUseAvx512() ? "AVX-512" : "plain x86-64");
  if (plain) {
    EXPECT_FALSE(cpu::fp8LoopsUseAvx512());
  }
  const uint64_t stride = 251;
  const int64_t chunk = 1 << 16;
  std::vector<float> in(chunk), factor(chunk, 1.0f);
  std::vector<uint8_t> out(chunk), each(chunk);
  for (FP8Format format : {FP8Format::E4M3, FP8Format::E5M2}) {
    int64_t mismatches = 0;
    for (uint64_t start = 0; start < (uint64_t(1) << 32);
         start += uint64_t(chunk) * stride) {
      int64_t n = 0;
      for (; n < chunk && start + uint64_t(n) * stride < (uint64_t(1) << 32);
           ++n)
        in[n] = fromBits(uint32_t(start + uint64_t(n) * stride));
      cpu::encodeSpan(format, in.data(), 1.0f, /*multiply=*/true, out.data(),
                      n);
      cpu::encodeSpanEach(format, in.data(), factor.data(), /*multiply=*/false,
                          each.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        uint8_t want = floatToFP8(in[i], format);
        mismatches += (out[i] != want) + (each[i] != want);
      }
    }
    EXPECT_EQ(mismatches, 0) << (format == FP8Format::E4M3 ? "e4m3" : "e5m2");
  }
  // Factors that are not 1: the product (or quotient) is rounded once, then
  // converted, as the scalar code does.
  for (int64_t i = 0; i < chunk; ++i) {
    in[i] = fromBits(uint32_t(0x3a000000u + uint32_t(i) * 977u));
    factor[i] = 0.75f + float(i % 7) * 0.3125f;
  }
  for (bool multiply : {true, false}) {
    cpu::encodeSpanEach(FP8Format::E4M3, in.data(), factor.data(), multiply,
                        each.data(), chunk);
    cpu::encodeSpan(FP8Format::E4M3, in.data(), 1.3f, multiply, out.data(),
                    chunk);
    int64_t mismatches = 0;
    for (int64_t i = 0; i < chunk; ++i) {
      float v = multiply ? in[i] * factor[i] : in[i] / factor[i];
      float w = multiply ? in[i] * 1.3f : in[i] / 1.3f;
      mismatches += (each[i] != floatToE4M3(v)) + (out[i] != floatToE4M3(w));
    }
    EXPECT_EQ(mismatches, 0) << (multiply ? "multiply" : "divide");
  }
}

TEST(CpuFp8Loops, Bf16DecoderGivesTheScalarBits) {
  std::vector<uint8_t> codes(256);
  for (int c = 0; c < 256; ++c)
    codes[c] = uint8_t(c);
  std::vector<uint16_t> out(256);
  for (FP8Format format : {FP8Format::E4M3, FP8Format::E5M2}) {
    const float *table = cpu::decodeTable(format);
    int64_t mismatches = 0;
    for (int e = -100; e <= 100; ++e) {
      float f = std::ldexp(1.0f, e);
      cpu::bf16Span(codes.data(), table, f, out.data(), 256);
      for (int c = 0; c < 256; ++c) {
        float v = fp8ToFloat(uint8_t(c), format) * f;
        uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        // Exact in BF16 (NaN codes stay NaN): the low half is zero.
        if (!std::isnan(v))
          mismatches += (bits & 0xffffu) != 0;
        mismatches += out[c] != uint16_t(bits >> 16);
      }
    }
    EXPECT_EQ(mismatches, 0);
  }
}

} // namespace
