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

#include <algorithm>
#include <cmath>
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

/// The largest error of `got` ([rows, cols]) against the oracle's `want`,
/// relative to each row's RMS.
inline double worstRowError(const interp::Tensor &want, const float *got,
                            int64_t rows, int64_t cols) {
  double worst = 0.0;
  for (int64_t i = 0; i < rows; ++i) {
    double rms = 0.0, err = 0.0;
    for (int64_t j = 0; j < cols; ++j) {
      double v = want.data[i * cols + j];
      rms += v * v;
      err = std::max(err, std::fabs(double(got[i * cols + j]) - v));
    }
    worst = std::max(worst, err / std::sqrt(rms / double(cols)));
  }
  return worst;
}

} // namespace infir2::test

#endif // INFIR2_TEST_UNIT_RUNTIME_INTERPRETERORACLE_H
