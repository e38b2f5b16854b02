//===- Fp8Export.h - The FP8 inference export -------------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// --export-fp8 DIR: the loaded model as a Hugging Face folder whose GEMM
// weights are FP8 with the recipe's block scales (Fp8Export.cpp says how).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_LOOP_FP8EXPORT_H
#define INFIR2_RUNTIME_DRIVER_LOOP_FP8EXPORT_H

#include "loop/Session.h"

#include <string>

namespace infir2::rt {

class Fp8Export {
public:
  explicit Fp8Export(Session &session) : s_(session) {}

  /// Writes the export to `out`.
  Status write(const std::string &out);

private:
  Session &s_;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_LOOP_FP8EXPORT_H
