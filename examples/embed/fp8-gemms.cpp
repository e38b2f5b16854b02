//===- fp8-gemms.cpp - A compiler that embeds InfiR2's FP8 recipe ---------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
//   fp8-gemms model.mlir [granularity]
//
// Parses a model, runs InfiR2's FP8 recipe configured from C++ (the option
// struct, not a string), then a pass of its own that prints each FP8 GEMM's
// location, operand granularities and formats, and their number.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

namespace {

/// Prints every fp8.scaled_matmul the recipe made: where it comes from and
/// how its operands are scaled.
struct PrintFP8GemmsPass
    : public mlir::PassWrapper<PrintFP8GemmsPass,
                               mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PrintFP8GemmsPass)

  llvm::StringRef getArgument() const override { return "print-fp8-gemms"; }

  void runOnOperation() override {
    int count = 0;
    getOperation().walk([&](infir2::fp8::ScaledMatmulOp gemm) {
      ++count;
      llvm::outs() << "fp8 gemm at " << gemm.getLoc() << ": lhs "
                   << gemm.getLhsGranularity() << " "
                   << gemm.getLhs().getType() << ", rhs "
                   << gemm.getRhsGranularity() << " "
                   << gemm.getRhs().getType() << "\n";
    });
    llvm::outs() << count << " FP8 GEMMs\n";
  }
};

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    llvm::errs() << "usage: fp8-gemms model.mlir [blockwise|tensorwise]\n";
    return 2;
  }
  mlir::DialectRegistry registry;
  infir2::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  if (!module)
    return 1; // the parser has said why

  // The recipe, configured from C++.
  infir2::FP8RecipeOptions options;
  options.granularity = argc == 3 && std::strcmp(argv[2], "tensorwise") == 0
                            ? infir2::Granularity::tensorwise
                            : infir2::Granularity::blockwise;
  options.keepFirstLast = 0;
  mlir::PassManager pm(&context);
  infir2::buildFP8RecipePipeline(pm, options);
  pm.addPass(std::make_unique<PrintFP8GemmsPass>());
  return mlir::failed(pm.run(*module)) ? 1 : 0;
}
