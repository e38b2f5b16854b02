//===- Infir2Attrs.td - Attributes of the infir2 dialect ---*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_INFIR2_IR_INFIR2ATTRS_TD
#define INFIR2_DIALECT_INFIR2_IR_INFIR2ATTRS_TD

include "infir2/Dialect/Infir2/IR/Infir2Dialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Infir2_InitKind : I32EnumAttr<"InitKind",
    "how a trainable parameter is initialized", [
      I32EnumAttrCase<"zeros", 0>,
      I32EnumAttrCase<"ones", 1>,
      I32EnumAttrCase<"normal", 2>
    ]> {
  let cppNamespace = "::infir2";
  let genSpecializedAttr = 0;
}

def Infir2_ParamAttr : AttrDef<Infir2_Dialect, "Param"> {
  let mnemonic = "param";
  let summary = "Marks a function argument as a trainable parameter.";
  let description = [{
    Attached to a function argument as `infir2.param`, it declares that the
    argument is a trainable parameter. `name` is the tensor's name in
    checkpoints (the Hugging Face name, so checkpoints interoperate) and must be
    unique among the function's parameters. The initialization rule is one of
    `zeros`, `ones` or `normal(std = S)` (zero-mean normal with standard
    deviation `S > 0`).

    ```mlir
    %norm: tensor<64xbf16> {infir2.param = #infir2.param<"model.norm.weight", ones>}
    %embed: tensor<256x64xbf16> {infir2.param = #infir2.param<"model.embed_tokens.weight", normal(std = 0.02)>}
    ```
  }];
  let parameters = (ins
    StringRefParameter<"checkpoint tensor name">:$name,
    EnumParameter<Infir2_InitKind>:$init,
    APFloatParameter<"standard deviation of the normal rule (0 otherwise)">:$std
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // INFIR2_DIALECT_INFIR2_IR_INFIR2ATTRS_TD
