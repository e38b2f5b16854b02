//===- RuntimeCallModelsTest.cpp - Every op has its runtime call ----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// --infir2-lower-to-runtime asks each op for its call through
// rtir::RuntimeCallOpInterface. These tests check that every op of InfiR2's
// dialects that can reach a planned step implements it, so a new op without
// a runtime entry point fails here rather than in a user's compile, and
// that the pass brings the models into a context that registered only the
// dialects (an embedder's).
//
//===----------------------------------------------------------------------===//

#include "infir2/Conversion/Passes.h"
#include "infir2/Dialect/FP8/IR/FP8Dialect.h"
#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/Dialect/Runtime/IR/RuntimeDialect.h"
#include "infir2/Dialect/Runtime/IR/RuntimeInterfaces.h"
#include "infir2/InitAll.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

TEST(RuntimeCallModels, EveryOpOfInfiR2sDialectsHasARuntimeCall) {
  DialectRegistry registry;
  infir2::registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  // A region and its terminator: the schedule lowers the ops inside.
  const StringRef structural[] = {"fp8.fused", "fp8.yield"};
  int checked = 0;
  for (RegisteredOperationName name : ctx.getRegisteredOperations()) {
    StringRef dialect = name.getDialectNamespace();
    if (dialect != "infir2" && dialect != "fp8")
      continue;
    bool expected = !llvm::is_contained(structural, name.getStringRef());
    EXPECT_EQ(name.hasInterface<infir2::rtir::RuntimeCallOpInterface>(),
              expected)
        << name.getStringRef().str();
    ++checked;
  }
  // Both dialects' ops were seen (30 infir2 ops and 7 fp8 ops today).
  EXPECT_GE(checked, 37);
  EXPECT_TRUE(RegisteredOperationName::lookup("arith.constant", &ctx)
                  ->hasInterface<infir2::rtir::RuntimeCallOpInterface>());
}

TEST(RuntimeCallModels, TheLoweringBringsItsModels) {
  // An embedder's context: the dialects, none of InfiR2's external models.
  DialectRegistry registry;
  registry.insert<infir2::Infir2Dialect, infir2::fp8::FP8Dialect,
                  infir2::rtir::RuntimeDialect, arith::ArithDialect,
                  func::FuncDialect>();
  MLIRContext ctx(registry);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      "func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %c = infir2.add %a, %b : tensor<4xf32>, tensor<4xf32>\n"
      "  return %c : tensor<4xf32>\n"
      "}",
      &ctx);
  ASSERT_TRUE(module);
  Operation *add = &*module->lookupSymbol<func::FuncOp>("f").getOps().begin();
  ASSERT_TRUE(isa<infir2::AddOp>(add));
  EXPECT_FALSE(isa<infir2::rtir::RuntimeCallOpInterface>(add));
  // The module is not planned, so the pass fails (with a diagnostic, which
  // the handler swallows); what matters is the registry it brought.
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  PassManager pm(&ctx);
  pm.addPass(infir2::createLowerToRuntimePass());
  EXPECT_TRUE(failed(pm.run(*module)));
  EXPECT_TRUE(isa<infir2::rtir::RuntimeCallOpInterface>(add));
}

} // namespace
