//===- InfiR2Plugin.cpp - InfiR2 as a plugin for upstream mlir-opt --------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The two entry points mlir-opt looks up in a plugin it loads:
//
//   mlir-opt-22 --load-dialect-plugin=libInfiR2Plugin.so \
//               --load-pass-plugin=libInfiR2Plugin.so ...
//
// The dialect half adds InfiR2's dialects and the GEMM interface models; the
// pass half adds InfiR2's passes and pipelines, never upstream's: mlir-opt
// registered those already, and a second registration of an option aborts.
// MLIR and LLVM come from the host's libMLIR.so and libLLVM.so, so the
// plugin and the tool share one MLIRContext implementation and one option
// registry.
//
//===----------------------------------------------------------------------===//

#include "infir2/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Support/Compiler.h"

#ifndef INFIR2_PLUGIN_VERSION
#define INFIR2_PLUGIN_VERSION "unknown"
#endif

extern "C" LLVM_ATTRIBUTE_WEAK ::mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "InfiR2", INFIR2_PLUGIN_VERSION,
          [](mlir::DialectRegistry *registry) {
            infir2::registerAllDialects(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK ::mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "InfiR2", INFIR2_PLUGIN_VERSION,
          []() { infir2::registerInfiR2PassesAndPipelines(); }};
}
