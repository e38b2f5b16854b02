//===- RuntimeAttrs.td - Buffers of a planned step ---------*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_RUNTIME_IR_RUNTIMEATTRS_TD
#define INFIR2_DIALECT_RUNTIME_IR_RUNTIMEATTRS_TD

include "infir2/Dialect/Runtime/IR/RuntimeDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypes.td"
include "mlir/IR/EnumAttr.td"

def RT_Region : I32EnumAttr<"Region", "where a buffer lives", [
    I32EnumAttrCase<"state", 0>,
    I32EnumAttrCase<"scratch", 1>
  ]> {
  let cppNamespace = "::infir2::rtir";
  let genSpecializedAttr = 0;
}

def RT_SlotKind : I32EnumAttr<"SlotKind", "what a state slot holds", [
    I32EnumAttrCase<"param", 0>,
    I32EnumAttrCase<"master", 1>,
    I32EnumAttrCase<"moment1", 2>,
    I32EnumAttrCase<"moment2", 3>,
    I32EnumAttrCase<"grad", 4>,
    I32EnumAttrCase<"input", 5>,
    I32EnumAttrCase<"output", 6>,
    I32EnumAttrCase<"cache", 7>,
    I32EnumAttrCase<"fp8_cache", 8>
  ]> {
  let cppNamespace = "::infir2::rtir";
  let genSpecializedAttr = 0;
}

def RT_BufferAttr : AttrDef<Runtime_Dialect, "Buffer"> {
  let mnemonic = "buffer";
  let summary = "A tensor placed in a region of the trainer's memory.";
  let description = [{
    `#infir2rt.buffer<scratch, 4096, tensor<4x128x256xbf16>>`: the tensor
    starts at byte 4096 of the step's scratch arena. `state` is the
    persistent region (parameters, masters, moments, gradient accumulators,
    inputs and outputs).
  }];
  let parameters = (ins EnumParameter<RT_Region>:$region,
                        "int64_t":$offset,
                        "::mlir::RankedTensorType":$type);
  let assemblyFormat = "`<` $region `,` $offset `,` $type `>`";
  let genVerifyDecl = 1;
}

#endif // INFIR2_DIALECT_RUNTIME_IR_RUNTIMEATTRS_TD

def RT_SlotAttr : AttrDef<Runtime_Dialect, "Slot"> {
  let mnemonic = "slot";
  let summary = "One tensor of the trainer's persistent state region.";
  let description = [{
    `#infir2rt.slot<param, "model.norm.weight", 4096, tensor<256xbf16>,
    #infir2.param<"model.norm.weight", ones>>`: the parameter's BF16 working
    copy lives at byte 4096 of the state region and is initialized to ones.
    `name` is the Hugging Face tensor name the checkpoint uses (for `input`
    and `output` slots, the role: `input_ids`, `loss`, ...); `init`, only on
    parameters, is their `#infir2.param`.
  }];
  let parameters = (ins EnumParameter<RT_SlotKind>:$kind,
                        StringRefParameter<"the tensor's name">:$name,
                        "int64_t":$offset,
                        "::mlir::RankedTensorType":$type,
                        OptionalParameter<"::mlir::Attribute">:$init);
  let assemblyFormat = "`<` $kind `,` $name `,` $offset `,` $type (`,` $init^)? `>`";
  let genVerifyDecl = 1;
}

def RT_PlanAttr : AttrDef<Runtime_Dialect, "Plan"> {
  let mnemonic = "plan";
  let summary = "The memory plan of a trainer: its state region and batch geometry.";
  let description = [{
    Set on the module by `--infir2-plan-memory`: the state region's size and
    slots, the largest step's scratch arena, the batch geometry the trainer
    feeds (micro-batch × sequence, vocabulary) and, for ZeRO-1, the world
    size the optimizer state is sharded over (0 otherwise).
  }];
  let parameters = (ins "int64_t":$state_bytes, "int64_t":$scratch_bytes,
                        "int64_t":$batch, "int64_t":$seq, "int64_t":$vocab,
                        "int64_t":$zero1_world_size,
                        "::mlir::ArrayAttr":$slots);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}
