//===- LinalgGemmModels.cpp - GemmOpInterface for linalg ------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Interfaces/LinalgGemmModels.h"

#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;

namespace {

/// linalg.matmul C[m, n] += A[m, k] · B[k, n] and linalg.batch_matmul with a
/// leading batch dimension: K is A's last and B's first (non-batch)
/// dimension. Forms with user-defined indexing maps (transposed operands,
/// broadcasts) and buffer semantics are reported as unsupported, so the
/// recipe keeps them as they are rather than guessing their layout.
template <typename OpTy>
struct LinalgGemmModel
    : public infir2::GemmOpInterface::ExternalModel<LinalgGemmModel<OpTy>,
                                                    OpTy> {
  Value getGemmLhs(Operation *op) const {
    return cast<OpTy>(op).getDpsInputs()[0];
  }
  Value getGemmRhs(Operation *op) const {
    return cast<OpTy>(op).getDpsInputs()[1];
  }
  Value getGemmResult(Operation *op) const {
    return op->getNumResults() == 1 ? op->getResult(0) : Value();
  }
  bool isLhsContractionLast(Operation *) const { return true; }
  bool isRhsContractionLast(Operation *) const { return false; }
  bool isSupportedGemm(Operation *op) const {
    auto gemm = cast<OpTy>(op);
    if (gemm.hasUserDefinedMaps() || op->getNumResults() != 1)
      return false;
    return llvm::all_of(op->getOperandTypes(), [](Type t) {
      auto tensor = dyn_cast<RankedTensorType>(t);
      return tensor && tensor.hasStaticShape();
    });
  }
};

/// fp8.scaled_matmul is a GEMM too, already in the "TN" layout: both
/// operands keep K last. Attaching the interface lets the report and the
/// verifier see FP8 GEMMs after quantization.
struct ScaledMatmulGemmModel
    : public infir2::GemmOpInterface::ExternalModel<
          ScaledMatmulGemmModel, infir2::fp8::ScaledMatmulOp> {
  Value getGemmLhs(Operation *op) const {
    return cast<infir2::fp8::ScaledMatmulOp>(op).getLhs();
  }
  Value getGemmRhs(Operation *op) const {
    return cast<infir2::fp8::ScaledMatmulOp>(op).getRhs();
  }
  Value getGemmResult(Operation *op) const { return op->getResult(0); }
  bool isLhsContractionLast(Operation *) const { return true; }
  bool isRhsContractionLast(Operation *) const { return true; }
  bool isSupportedGemm(Operation *) const { return true; }
};

/// fp8.scaled_matmul's optional `acc` is an FP32 accumulator as
/// infir2.matmul's is (the interface's default methods read `getAcc`).
struct ScaledMatmulAccumulatingModel
    : public infir2::AccumulatingOpInterface::ExternalModel<
          ScaledMatmulAccumulatingModel, infir2::fp8::ScaledMatmulOp> {};

} // namespace

void infir2::registerLinalgGemmModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, fp8::FP8Dialect *) {
    fp8::ScaledMatmulOp::attachInterface<ScaledMatmulGemmModel,
                                         ScaledMatmulAccumulatingModel>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, linalg::LinalgDialect *) {
    linalg::MatmulOp::attachInterface<LinalgGemmModel<linalg::MatmulOp>>(*ctx);
    linalg::BatchMatmulOp::attachInterface<
        LinalgGemmModel<linalg::BatchMatmulOp>>(*ctx);
  });
}
