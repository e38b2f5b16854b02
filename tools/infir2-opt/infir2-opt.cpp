//===- infir2-opt.cpp - InfiR2's optimizer driver -------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Parses, verifies, transforms and prints IR in InfiR2's dialects, like
// mlir-opt, with only InfiR2's dialects and passes registered.
//
//===----------------------------------------------------------------------===//

#include "infir2/InitAll.h"
#include "infir2/Support/ToolOptions.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  infir2::setUpToolOptions();
  mlir::DialectRegistry registry;
  infir2::registerAllDialects(registry);
  infir2::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv,
      "InfiR2 optimizer driver: FP8 training as a compiler problem\n",
      registry));
}
