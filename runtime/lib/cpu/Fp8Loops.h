//===- Fp8Loops.h - The FP8 inner loops of the CPU backend ------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Internal to the CPU backend: the loops that encode FP32 values to FP8 and
// decode FP8 codes to BF16, each built twice (Fp8Loops.cpp): for AVX-512,
// taken where the CPU has it, and for the plain x86-64 the library targets,
// whose SSE2 cannot vectorize the integer half of the conversion. Neither
// build may use FMA, so both give the same bits (the exhaustive FP8 tests
// run whichever this CPU takes).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CPU_FP8LOOPS_H
#define INFIR2_RUNTIME_CPU_FP8LOOPS_H

#include "infir2/runtime/FP8.h"

#include <cstdint>

namespace infir2::rt::cpu {

/// o[c] = fp8(in[c] · f) when `multiply`, else fp8(in[c] / f), c < n.
void encodeSpan(FP8Format format, const float *in, float f, bool multiply,
                uint8_t *o, int64_t n);

/// The same with one factor per element: fp8(in[c] · f[c]) or in[c] / f[c].
void encodeSpanEach(FP8Format format, const float *in, const float *f,
                    bool multiply, uint8_t *o, int64_t n);

/// o[c] = the BF16 bits of table[codes[c]] · f, for a power of two f that
/// keeps every value exact in BF16 (the top half of its FP32 bits).
void bf16Span(const uint8_t *codes, const float *table, float f, uint16_t *o,
              int64_t n);

/// Whether this process runs the AVX-512 build of the loops.
bool fp8LoopsUseAvx512();

/// Every code of `format` decoded once (fp8ToFloat).
const float *decodeTable(FP8Format format);

} // namespace infir2::rt::cpu

#endif // INFIR2_RUNTIME_CPU_FP8LOOPS_H
