//===- InitAll.cpp - Register InfiR2's dialects and passes ----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/InitAll.h"

#include "infir2/Conversion/Passes.h"
#include "infir2/Conversion/RuntimeCallModels.h"
#include "infir2/Dialect/FP8/IR/FP8Dialect.h"
#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "infir2/Dialect/Runtime/IR/RuntimeDialect.h"
#include "infir2/Interfaces/LinalgGemmModels.h"
#include "infir2/Pipelines/Pipelines.h"
#include "infir2/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void infir2::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<infir2::Infir2Dialect, infir2::fp8::FP8Dialect,
                  infir2::rtir::RuntimeDialect>();
  registry.insert<mlir::arith::ArithDialect,
                  mlir::bufferization::BufferizationDialect,
                  mlir::func::FuncDialect, mlir::LLVM::LLVMDialect,
                  mlir::linalg::LinalgDialect,
                  mlir::tensor::TensorDialect>();
  infir2::registerLinalgGemmModels(registry);
  infir2::registerRuntimeCallModels(registry);
}

void infir2::registerInfiR2PassesAndPipelines() {
  infir2::registerInfiR2Passes();
  infir2::registerInfiR2ConversionPasses();
  infir2::registerPipelines();
}

void infir2::registerAllPasses() {
  infir2::registerInfiR2PassesAndPipelines();
  // The generic transforms a reader of InfiR2's IR uses, not all of
  // upstream's: InfiR2's passes and pipelines lead infir2-opt --help.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::registerPrintOpStatsPass();
}
