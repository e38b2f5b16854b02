//===- Fp8Stats.h - infir2-run's --fp8-stats ---------------------*- C++
//-*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The interpreter's record of each FP8 quantization of the function it runs,
// as JSON lines with the fields and order a trainer's --fp8-stats-every
// writes (runtime/driver/device/Fp8Stats.h): the oracle its statistics are
// checked against (test/tools/infir2-compile/fp8-stats.test).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TOOLS_INFIR2_RUN_FP8STATS_H
#define INFIR2_TOOLS_INFIR2_RUN_FP8STATS_H

#include "infir2/Interpreter/Interpreter.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace infir2::run {

/// Writes each quantization `function` runs to `os` as one JSON line.
infir2::interp::QuantizationObserver fp8StatsWriter(llvm::raw_ostream &os,
                                                    std::string function);

} // namespace infir2::run

#endif // INFIR2_TOOLS_INFIR2_RUN_FP8STATS_H
