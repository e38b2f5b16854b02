//===- Registration.cpp - Register InfiR2 from C --------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2-c/Registration.h"

#include "infir2/InitAll.h"

#include "mlir/CAPI/IR.h"

#include <mutex>

void infir2RegisterAllDialects(MlirDialectRegistry registry) {
  infir2::registerAllDialects(*unwrap(registry));
}

void infir2RegisterAllPasses(void) {
  // MLIR's pass registry treats a second registration of a pipeline as a
  // fatal error; a library must not abort its caller for calling twice.
  static std::once_flag once;
  std::call_once(once, [] { infir2::registerAllPasses(); });
}
