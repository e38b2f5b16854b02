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
  let cppNamespace = "::infir2::rt";
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
