//===- mlir-pipelines.cpp - Fuzzes the IR parser and the pipelines --------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The input is MLIR text, parsed with every InfiR2 dialect registered (as
// infir2-opt parses it), then run through --fp8-recipe and, separately,
// --infir2-trainer (down to the LLVM dialect), each with the verifier after
// every pass. Diagnostics are expected; a crash, a sanitizer finding or a
// pass that leaves invalid IR unreported is not.
//
//===----------------------------------------------------------------------===//

#include "infir2/InitAll.h"
#include "infir2/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <string>

using namespace mlir;

/// Parses `text` and runs the pipeline `build` adds; the result is ignored.
template <typename BuildFn>
static void runPipeline(const DialectRegistry &registry, llvm::StringRef text,
                        BuildFn build) {
  MLIRContext ctx(registry, MLIRContext::Threading::DISABLED);
  // Errors are the expected answer to most inputs: keep them quiet.
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  if (!module)
    return;
  PassManager pm(&ctx);
  build(pm);
  (void)pm.run(*module);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry();
    infir2::registerAllDialects(*r);
    return r;
  }();
  // MLIR's lexer finds the end of its buffer at a NUL, as every file the
  // tools read (a MemoryBuffer) has: libFuzzer's bytes have none, so they
  // are copied. (Parsing the bare bytes read past their end, the first
  // finding of this target: a harness bug, not one of the parser's.)
  std::string copy(reinterpret_cast<const char *>(data), size);
  llvm::StringRef text(copy.c_str(), size);
  runPipeline(*registry, text, [](PassManager &pm) {
    infir2::buildFP8RecipePipeline(pm, infir2::FP8RecipeOptions());
  });
  runPipeline(*registry, text, [](PassManager &pm) {
    infir2::buildTrainerPipeline(pm, infir2::TrainerPipelineOptions());
  });
  return 0;
}
