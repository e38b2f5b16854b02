//===- InterpreterOracle.h - The reference interpreter as a test oracle ----===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Runs `func.func @f` of an MLIR source through the reference interpreter
// (FP64), for tests that check a runtime kernel against it.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TEST_UNIT_RUNTIME_INTERPRETERORACLE_H
#define INFIR2_TEST_UNIT_RUNTIME_INTERPRETERORACLE_H

#include "infir2/InitAll.h"
#include "infir2/Interpreter/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>

namespace infir2::test {

class InterpreterOracle {
public:
  InterpreterOracle() : ctx(makeRegistry()) {}

  /// The results of `source`'s @f on `inputs`; none (and a test failure)
  /// when it does not parse or run.
  llvm::SmallVector<interp::Tensor>
  interpret(const std::string &source, llvm::ArrayRef<interp::Tensor> inputs) {
    module = mlir::parseSourceString<mlir::ModuleOp>(source, &ctx);
    EXPECT_TRUE(module) << source;
    if (!module)
      return {};
    auto r = interp::run(module->lookupSymbol<mlir::func::FuncOp>("f"), inputs);
    EXPECT_TRUE(mlir::succeeded(r));
    return mlir::succeeded(r) ? *r : llvm::SmallVector<interp::Tensor>{};
  }

private:
  static mlir::DialectRegistry makeRegistry() {
    mlir::DialectRegistry r;
    registerAllDialects(r);
    return r;
  }
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

} // namespace infir2::test

#endif // INFIR2_TEST_UNIT_RUNTIME_INTERPRETERORACLE_H
