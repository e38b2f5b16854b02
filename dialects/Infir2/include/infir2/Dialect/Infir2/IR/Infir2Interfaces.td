//===- Infir2Interfaces.td - Interfaces of the infir2 dialect -*- tablegen -*-===//
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

#endif // INFIR2_DIALECT_INFIR2_IR_INFIR2INTERFACES_TD
