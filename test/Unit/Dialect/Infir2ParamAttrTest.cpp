//===- Infir2ParamAttrTest.cpp - The infir2.param attribute ---------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Checks the C++ API of #infir2.param (build, print, parse, verify) that the
// importer and the checkpoint writer will rely on.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace infir2;

namespace {

class ParamAttrTest : public ::testing::Test {
protected:
  ParamAttrTest() { ctx.loadDialect<Infir2Dialect>(); }
  MLIRContext ctx;
};

std::string print(Attribute attr) {
  std::string s;
  llvm::raw_string_ostream os(s);
  attr.print(os);
  return s;
}

TEST_F(ParamAttrTest, PrintsAndParsesBack) {
  auto attr = ParamAttr::get(&ctx, "model.layers.0.mlp.up_proj.weight",
                             InitKind::normal, llvm::APFloat(0.02));
  std::string text = print(attr);
  EXPECT_EQ(text, "#infir2.param<\"model.layers.0.mlp.up_proj.weight\", "
                  "normal(std = 2.000000e-02)>");
  Attribute parsed = parseAttribute(text, &ctx);
  EXPECT_EQ(parsed, attr);
}

TEST_F(ParamAttrTest, OnesHasNoStd) {
  auto attr = ParamAttr::get(&ctx, "model.norm.weight", InitKind::ones,
                             llvm::APFloat(0.0));
  EXPECT_EQ(print(attr), "#infir2.param<\"model.norm.weight\", ones>");
  EXPECT_EQ(parseAttribute(print(attr), &ctx), attr);
}

TEST_F(ParamAttrTest, VerifierRejectsBadStd) {
  std::string error;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    error = diag.str();
    return success();
  });
  auto emit = [&] { return emitError(UnknownLoc::get(&ctx)); };
  EXPECT_TRUE(failed(
      ParamAttr::verify(emit, "w", InitKind::normal, llvm::APFloat(-1.0))));
  EXPECT_NE(error.find("positive, finite std"), std::string::npos) << error;
  EXPECT_TRUE(failed(
      ParamAttr::verify(emit, "w", InitKind::zeros, llvm::APFloat(0.5))));
  EXPECT_NE(error.find("takes no std"), std::string::npos) << error;
  EXPECT_TRUE(
      failed(ParamAttr::verify(emit, "", InitKind::zeros, llvm::APFloat(0.0))));
  EXPECT_TRUE(succeeded(
      ParamAttr::verify(emit, "w", InitKind::normal, llvm::APFloat(0.02))));
  EXPECT_NE(error.find("must not be empty"), std::string::npos) << error;
}

} // namespace
