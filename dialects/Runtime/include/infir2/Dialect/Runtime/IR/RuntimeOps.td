//===- RuntimeOps.td - Calls of runtime entry points -------*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_RUNTIME_IR_RUNTIMEOPS_TD
#define INFIR2_DIALECT_RUNTIME_IR_RUNTIMEOPS_TD

include "infir2/Dialect/Runtime/IR/RuntimeDialect.td"
include "infir2/Dialect/Runtime/IR/RuntimeAttrs.td"

def RT_BufferArrayAttr : TypedArrayAttrBase<RT_BufferAttr, "buffers">;

def RT_CallOp : RT_Op<"call"> {
  let summary = "Calls one runtime entry point on planned buffers.";
  let description = [{
    Calls `infir2rt_<entry>` with the buffers (inputs first, then outputs)
    and the attribute values, in the order `ABI.def` documents for that entry
    point. `where` names the op the call comes from, for the runtime's error
    messages.

    ```mlir
    infir2rt.call "rms_norm" [#infir2rt.buffer<scratch, 0, tensor<4x128x256xbf16>>,
        #infir2rt.buffer<state, 256, tensor<256xbf16>>,
        #infir2rt.buffer<scratch, 262144, tensor<4x128x256xbf16>>]
        attributes [1.0e-06] at "infir2.rms_norm at model.mlir:12:5"
    ```
  }];
  let arguments = (ins StrAttr:$entry, RT_BufferArrayAttr:$buffers,
                       DenseF64ArrayAttr:$values, StrAttr:$where);
  let assemblyFormat = [{
    $entry $buffers `attributes` $values `at` $where attr-dict
  }];
  let hasVerifier = 1;
}

#endif // INFIR2_DIALECT_RUNTIME_IR_RUNTIMEOPS_TD
