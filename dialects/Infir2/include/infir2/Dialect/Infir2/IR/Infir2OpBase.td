//===- Infir2OpBase.td - Constraints shared by infir2 ops --*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The operand and attribute constraints shared by the model, gradient and
// optimizer ops.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_INFIR2_IR_INFIR2OPBASE_TD
#define INFIR2_DIALECT_INFIR2_IR_INFIR2OPBASE_TD

include "infir2/Dialect/Infir2/IR/Infir2Dialect.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"

// Model tensors hold high-precision floats; FP8 appears only where the recipe
// inserts `fp8` ops.
def Infir2_FloatTensor : StaticShapeTensorOf<[BF16, F16, F32, F64]>;
def Infir2_IdTensor : StaticShapeTensorOf<[I32, I64]>;
def Infir2_MaskTensor : StaticShapeTensorOf<[I1, BF16, F16, F32, F64]>;
// Any of the above: what slices and concatenations take.
def Infir2_AnyTensor : StaticShapeTensorOf<[I1, I32, I64, BF16, F16, F32, F64]>;
// A 0-d f32 tensor: the loss, a learning rate, a norm.
def Infir2_Scalar : 0DTensorOf<[F32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;

def Infir2_FloatPositive : AttrConstraint<
    CPred<"::llvm::cast<::mlir::FloatAttr>($_self).getValueAsDouble() > 0.0">,
    "whose value is positive">;
def PositiveF64Attr : ConfinedAttr<F64Attr, [Infir2_FloatPositive]>;

#endif // INFIR2_DIALECT_INFIR2_IR_INFIR2OPBASE_TD
