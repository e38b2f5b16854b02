//===- FP8Attrs.td - Attributes of the fp8 dialect ---------*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_FP8_IR_FP8ATTRS_TD
#define INFIR2_DIALECT_FP8_IR_FP8ATTRS_TD

include "infir2/Dialect/FP8/IR/FP8Dialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Format and scale rule
//===----------------------------------------------------------------------===//

def FP8_Format : I32EnumAttr<"Format", "FP8 element format", [
    I32EnumAttrCase<"e4m3", 0>,   // f8E4M3FN, max 448
    I32EnumAttrCase<"e5m2", 1>    // f8E5M2, max 57344
  ]> {
  let cppNamespace = "::infir2::fp8";
  let genSpecializedAttr = 0;
}
def FP8_FormatAttr : EnumAttr<FP8_Dialect, FP8_Format, "format"> {
  let summary = "The FP8 element format: e4m3 (f8E4M3FN) or e5m2 (f8E5M2).";
}

def FP8_ScaleRule : I32EnumAttr<"ScaleRule", "how a scale is derived from amax", [
    I32EnumAttrCase<"pow2", 0>,  // amax / fmt_max rounded up to a power of two (E8M0-exact)
    I32EnumAttrCase<"fp32", 1>,  // amax / fmt_max as a plain FP32 value
    I32EnumAttrCase<"floor", 2>  // 2^(floor(log2 amax) - emax): the OCP MX specification's rule
  ]> {
  let cppNamespace = "::infir2::fp8";
  let genSpecializedAttr = 0;
}
def FP8_ScaleRuleAttr : EnumAttr<FP8_Dialect, FP8_ScaleRule, "scale_rule"> {
  let summary = "The scale rule: pow2 (rounded up to a power of two), fp32, or floor (OCP MX).";
}

//===----------------------------------------------------------------------===//
// Granularity
//===----------------------------------------------------------------------===//

def FP8_GranularityAttrInterface : AttrInterface<"GranularityAttrInterface"> {
  let cppNamespace = "::infir2::fp8";
  let description = [{
    A scaling granularity: which elements of a tensor share one scale. It is
    described by the block shape it induces on a tensor of a given shape; the
    scale tensor's shape follows (see `getScaleShape`).
  }];
  let methods = [
    InterfaceMethod<[{
        Returns the shape of one scaling block for a tensor of shape `shape`,
        or emits a diagnostic through `emitError` and fails when this
        granularity cannot apply to a tensor of that rank.
      }],
      "::llvm::FailureOr<::llvm::SmallVector<int64_t>>", "getBlockShape",
      (ins "::llvm::ArrayRef<int64_t>":$shape,
           "::llvm::function_ref<::mlir::InFlightDiagnostic()>":$emitError)>,
    InterfaceMethod<[{
        Returns the element type of the scales this granularity carries:
        `f32` (which may hold any scale rule's values; E8M0 storage is
        allowed under the power-of-two rules, `pow2` and `floor`) unless the
        granularity fixes it, as MX blocks fix E8M0.
      }],
      "::mlir::Type", "getScaleElementType", (ins), [{}], [{
        return ::mlir::Float32Type::get($_attr.getContext());
      }]>
  ];
}

class FP8_GranularityAttr<string name, string attrMnemonic,
                          list<string> overridden = []>
    : AttrDef<FP8_Dialect, name, [
        DeclareAttrInterfaceMethods<FP8_GranularityAttrInterface,
                                    overridden>]> {
  let mnemonic = attrMnemonic;
}

def FP8_TensorwiseAttr : FP8_GranularityAttr<"Tensorwise", "tensorwise"> {
  let summary = "One scale for the whole tensor.";
  let description = [{
    Per-tensor ("current") scaling: the scale tensor has the data's rank and
    every dimension 1.

    ```mlir
    %q, %s = fp8.quantize %x to e4m3 by #fp8.tensorwise scale fp32
        : tensor<64x256xbf16> -> tensor<64x256xf8E4M3FN>, tensor<1x1xf32>
    ```
  }];
}

def FP8_GroupsAttr : FP8_GranularityAttr<"Groups", "groups"> {
  let summary = "One scale per group of `size` consecutive elements along dimension `dim`.";
  let description = [{
    1×N groups: the InfiR2 recipe scales activations and output gradients in
    1×128 groups along the contraction dimension (`#fp8.groups<128, dim = 1>`
    for a `[tokens, K]` matrix), and the column-wise copies used by the
    weight-gradient GEMM along the token dimension (`dim = 0`). Row-wise
    scaling is a group spanning the whole row. `size` must divide the
    dimension.

    ```mlir
    %q, %s = fp8.quantize %x to e4m3 by #fp8.groups<128, dim = 1> scale pow2
        : tensor<64x256xbf16> -> tensor<64x256xf8E4M3FN>, tensor<64x2xf32>
    ```
  }];
  let parameters = (ins "int64_t":$size, "int64_t":$dim);
  let assemblyFormat = "`<` $size `,` `dim` `=` $dim `>`";
  let genVerifyDecl = 1;
}

def FP8_BlocksAttr : FP8_GranularityAttr<"Blocks", "blocks"> {
  let summary = "One scale per `rows`×`cols` tile of the last two dimensions.";
  let description = [{
    2-D block scaling, used for weights (128×128 in the InfiR2 recipe) so that a
    weight and its transpose share one set of scales. Leading (batch)
    dimensions get a scale each. `rows` and `cols` must divide the last two
    dimensions.

    ```mlir
    %q, %s = fp8.quantize %w to e4m3 by #fp8.blocks<128, 128> scale pow2
        : tensor<256x512xbf16> -> tensor<256x512xf8E4M3FN>, tensor<2x4xf32>
    ```
  }];
  let parameters = (ins "int64_t":$rows, "int64_t":$cols);
  let assemblyFormat = "`<` $rows `,` $cols `>`";
  let genVerifyDecl = 1;
}

def FP8_MxAttr : FP8_GranularityAttr<"Mx", "mx", ["getScaleElementType"]> {
  let summary = "An OCP MX block: 32 consecutive elements along `dim`, one E8M0 scale.";
  let description = [{
    The microscaling (MX) format of the OCP Microscaling Formats (MX)
    specification v1.0, as Blackwell's tensor cores take it (MXFP8): every
    32 consecutive elements along `dim`, the contraction dimension where a
    GEMM reads the tensor, share one power-of-two scale stored as
    `f8E8M0FNU` (an 8-bit exponent, bias 127). The scale tensor is
    therefore `f8E8M0FNU` and the scale rule a power-of-two one: `pow2`
    (rounded up, as TransformerEngine's MXFP8 recipe: nothing saturates) or
    `floor` (the specification's own conversion). The recipe's
    `granularity=mxfp8` scales every operand of an FP8 GEMM this way,
    weights included (a weight and its transpose get separate blocks).
    32 must divide the dimension.

    ```mlir
    %q, %s = fp8.quantize %x to e4m3 by #fp8.mx<dim = 1> scale pow2
        : tensor<64x256xbf16> -> tensor<64x256xf8E4M3FN>, tensor<64x8xf8E8M0FNU>
    ```
  }];
  let parameters = (ins "int64_t":$dim);
  let assemblyFormat = "`<` `dim` `=` $dim `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The number of elements that share a scale (the specification's k).
    static constexpr int64_t kBlockSize = 32;
  }];
}

//===----------------------------------------------------------------------===//
// Precision decisions
//===----------------------------------------------------------------------===//

def FP8_Precision : I32EnumAttr<"Precision", "where a GEMM runs", [
    I32EnumAttrCase<"fp8", 0>, I32EnumAttrCase<"high", 1>]> {
  let cppNamespace = "::infir2::fp8";
  let genSpecializedAttr = 0;
}

def FP8_GemmRole : I32EnumAttr<"GemmRole", "a GEMM's place in the training step", [
    I32EnumAttrCase<"fprop", 0>,  // forward
    I32EnumAttrCase<"dgrad", 1>,  // gradient of an activation
    I32EnumAttrCase<"wgrad", 2>   // gradient of a weight (contracts over tokens)
  ]> {
  let cppNamespace = "::infir2::fp8";
  let genSpecializedAttr = 0;
}

def FP8_DecisionAttr : AttrDef<FP8_Dialect, "Decision"> {
  let mnemonic = "decision";
  let summary = "Records whether a GEMM runs in FP8, how, and why.";
  let description = [{
    Put on a GEMM as `fp8.decision` by `--infir2-assign-precision`, so that
    every precision decision can be read in the IR. An FP8 decision names the
    scaling granularity and FP8 format of each operand (as the operand is
    stored in this GEMM) and the scale rule; a high-precision one says why
    the GEMM stays in BF16/FP32.

    ```mlir
    #fp8.decision<precision = fp8, role = fprop,
                  lhs = #fp8.groups<128, dim = 2>, rhs = #fp8.blocks<128, 128>,
                  lhs_format = e4m3, rhs_format = e4m3, scales = pow2,
                  reason = "linear layer model.layers.0.mlp.up_proj.weight">
    #fp8.decision<precision = high, role = fprop, reason = "the LM head stays in high precision">
    ```
  }];
  let parameters = (ins
    EnumParameter<FP8_Precision>:$precision,
    EnumParameter<FP8_GemmRole>:$role,
    OptionalParameter<"::infir2::fp8::GranularityAttrInterface">:$lhs,
    OptionalParameter<"::infir2::fp8::GranularityAttrInterface">:$rhs,
    OptionalParameter<"std::optional<::infir2::fp8::Format>">:$lhs_format,
    OptionalParameter<"std::optional<::infir2::fp8::Format>">:$rhs_format,
    OptionalParameter<"std::optional<::infir2::fp8::ScaleRule>">:$scales,
    StringRefParameter<"why">:$reason
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // INFIR2_DIALECT_FP8_IR_FP8ATTRS_TD
