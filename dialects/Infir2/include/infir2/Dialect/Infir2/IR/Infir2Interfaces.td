//===- Infir2Interfaces.td - Interfaces of infir2 ops ------*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_INFIR2_IR_INFIR2INTERFACES_TD
#define INFIR2_DIALECT_INFIR2_IR_INFIR2INTERFACES_TD

include "mlir/IR/OpBase.td"

def Infir2_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::infir2";
  let description = [{
    The reverse-mode gradient rule of an op: given the gradients of its
    results (dL/dresult), it builds the ops that compute the gradients of its
    operands (dL/doperand). Reverse-mode autodiff (`--infir2-autodiff`) calls
    it on every op between the parameters and the loss, so a new op — of any
    dialect, through an external model — becomes differentiable by
    implementing it.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds, at the builder's insertion point, the gradient of every
        operand given `resultGrads` (one per result, each of its result's
        type). Appends one value per operand to `operandGrads`, of the
        operand's type, or a null value for an operand that has no gradient
        (token ids, positions, targets, masks). Fails with a diagnostic when
        the rule does not cover this form of the op.
      }],
      "::llvm::LogicalResult", "buildGradient",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

def Infir2_GemmOpInterface : OpInterface<"GemmOpInterface"> {
  let cppNamespace = "::infir2";
  let description = [{
    A (batched) matrix product `C[b..., m, n] = Σ_k A[b..., m, k] · B[b..., k, n]`
    whose operands may store K first or last. The FP8 recipe passes act on
    this interface, not on `infir2.matmul` by name, and InfiR2 attaches it to
    `linalg.matmul` and `linalg.batch_matmul` as external models, so a
    compiler that speaks linalg can embed the recipe unchanged.
  }];
  let methods = [
    InterfaceMethod<"The left operand A.", "::mlir::Value", "getGemmLhs">,
    InterfaceMethod<"The right operand B.", "::mlir::Value", "getGemmRhs">,
    InterfaceMethod<"The product C (a tensor).", "::mlir::Value",
                    "getGemmResult">,
    InterfaceMethod<[{
        Whether A is stored [..., M, K] (true) or [..., K, M] (false).
      }], "bool", "isLhsContractionLast">,
    InterfaceMethod<[{
        Whether B is stored [..., N, K] (true) or [..., K, N] (false).
      }], "bool", "isRhsContractionLast">,
    InterfaceMethod<[{
        Whether this op is a GEMM the recipe can rewrite: statically shaped
        tensors, a layout this interface describes. Ops that are not keep
        their precision, with the reason recorded.
      }], "bool", "isSupportedGemm">
  ];
}

def Infir2_AccumulatingOpInterface : OpInterface<"AccumulatingOpInterface"> {
  let cppNamespace = "::infir2";
  let description = [{
    An op that can add one of its results into an accumulator: with the
    optional operand `acc` (its last operand, of that result's shape and
    `f32`; a GEMM's may also be `bf16`), the result is `acc + ` what the op
    computes, added before the one rounding, and has the accumulator's
    type. Weight, bias and norm
    gradients reach their FP32 accumulators this way, so no BF16 gradient
    exists (`--infir2-fuse-accumulation` makes these ops). Each element of
    the result reads its own accumulator element before it is written, so
    the planner may give the two one buffer; the lowering to runtime calls
    passes the accumulator after the results, with a last attribute that
    says whether there is one.
  }];
  let methods = [
    InterfaceMethod<"The accumulator, or null.", "::mlir::Value",
      "getAccumulator", (ins), [{}], [{
        return $_op.getAcc();
      }]>,
    InterfaceMethod<"The result the accumulator adds into.",
      "::mlir::OpResult", "getAccumulatedResult", (ins), [{}], [{
        return $_op->getResult(0);
      }]>,
    InterfaceMethod<[{
        This op, without an accumulator, rebuilt at the builder's insertion
        point with accumulator `acc`: the accumulated result takes `acc`'s
        type; the other results, the operands and the attributes stay.
      }],
      "::mlir::Operation *", "cloneWithAccumulator",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Value":$acc), [{}], [{
        ::mlir::Operation *op = builder.clone(*$_op.getOperation());
        op->insertOperands(op->getNumOperands(), acc);
        unsigned n = ::llvm::cast<::infir2::AccumulatingOpInterface>(
            $_op.getOperation()).getAccumulatedResult().getResultNumber();
        op->getResult(n).setType(acc.getType());
        return op;
      }]>
  ];
}

#endif // INFIR2_DIALECT_INFIR2_IR_INFIR2INTERFACES_TD
