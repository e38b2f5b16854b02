//===- Fp8Loops.cpp - The FP8 inner loops of the CPU backend --------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Each loop is written once, as an inline template, and instantiated in a
// function built for AVX-512 and in one built for plain x86-64; the first
// call picks one for the process (see Fp8Loops.h).
//
//===----------------------------------------------------------------------===//

#include "Fp8Loops.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <string>

namespace infir2::rt::cpu {

namespace {

#define INFIR2_AVX512                                                          \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))

/// `avx512` where this CPU has AVX-512 (F, BW, VL, DQ), else `plain`;
/// INFIR2_CPU_FP8_LOOPS=plain in the environment takes `plain` anyway (so
/// that the tests run both builds on one machine).
template <typename Fn> Fn pickForCpu(Fn avx512, Fn plain) {
  static const bool use = [] {
    const char *v = std::getenv("INFIR2_CPU_FP8_LOOPS");
    if (v && std::string(v) == "plain")
      return false;
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq");
  }();
  return use ? avx512 : plain;
}

/// The encoding loop; `Each`: one factor per element. Lambdas, not function
/// pointers: the conversion inlines and vectorizes.
template <bool Each>
inline void encode(FP8Format format, const float *in, const float *f,
                   bool multiply, uint8_t *o, int64_t n) {
  auto loop = [&](auto convert) {
    if (multiply) {
#pragma omp simd
      for (int64_t c = 0; c < n; ++c)
        o[c] = convert(in[c] * f[Each ? c : 0]);
    } else {
#pragma omp simd
      for (int64_t c = 0; c < n; ++c)
        o[c] = convert(in[c] / f[Each ? c : 0]);
    }
  };
  if (format == FP8Format::E4M3)
    loop([](float v) { return floatToE4M3Branchless(v); });
  else
    loop([](float v) { return floatToE5M2Branchless(v); });
}

inline void decodeBf16(const uint8_t *codes, const float *table, float f,
                       uint16_t *o, int64_t n) {
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) {
    float v = table[codes[c]] * f;
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    o[c] = uint16_t(bits >> 16);
  }
}

template <bool Each>
INFIR2_AVX512 void encodeAvx512(FP8Format format, const float *in,
                                const float *f, bool multiply, uint8_t *o,
                                int64_t n) {
  encode<Each>(format, in, f, multiply, o, n);
}
template <bool Each>
void encodePlain(FP8Format format, const float *in, const float *f,
                 bool multiply, uint8_t *o, int64_t n) {
  encode<Each>(format, in, f, multiply, o, n);
}
INFIR2_AVX512 void decodeAvx512(const uint8_t *codes, const float *table,
                                float f, uint16_t *o, int64_t n) {
  decodeBf16(codes, table, f, o, n);
}
void decodePlain(const uint8_t *codes, const float *table, float f,
                 uint16_t *o, int64_t n) {
  decodeBf16(codes, table, f, o, n);
}

} // namespace

void encodeSpan(FP8Format format, const float *in, float f, bool multiply,
                uint8_t *o, int64_t n) {
  static const auto fn = pickForCpu(encodeAvx512<false>, encodePlain<false>);
  fn(format, in, &f, multiply, o, n);
}

void encodeSpanEach(FP8Format format, const float *in, const float *f,
                    bool multiply, uint8_t *o, int64_t n) {
  static const auto fn = pickForCpu(encodeAvx512<true>, encodePlain<true>);
  fn(format, in, f, multiply, o, n);
}

void bf16Span(const uint8_t *codes, const float *table, float f, uint16_t *o,
              int64_t n) {
  static const auto fn = pickForCpu(decodeAvx512, decodePlain);
  fn(codes, table, f, o, n);
}

bool fp8LoopsUseAvx512() {
  return pickForCpu(true, false);
}

const float *decodeTable(FP8Format format) {
  static const auto tables = [] {
    std::array<std::array<float, 256>, 2> t{};
    for (int code = 0; code < 256; ++code) {
      t[0][code] = fp8ToFloat(uint8_t(code), FP8Format::E4M3);
      t[1][code] = fp8ToFloat(uint8_t(code), FP8Format::E5M2);
    }
    return t;
  }();
  return tables[format == FP8Format::E5M2].data();
}

} // namespace infir2::rt::cpu
