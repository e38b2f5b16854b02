//===- RuntimeInterfaces.td - Ops that become runtime calls -*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_RUNTIME_IR_RUNTIMEINTERFACES_TD
#define INFIR2_DIALECT_RUNTIME_IR_RUNTIMEINTERFACES_TD

include "mlir/IR/OpBase.td"

def Runtime_RuntimeCallOpInterface : OpInterface<"RuntimeCallOpInterface"> {
  let cppNamespace = "::infir2::rtir";
  let description = [{
    The runtime call an op of a planned step becomes: an entry point of
    `runtime/include/infir2/runtime/ABI.def`, the values whose buffers it
    reads and writes in the entry's order, and the entry's attribute struct
    (`runtime/include/infir2/runtime/Attributes.h`) encoded into words.
    `--infir2-lower-to-runtime` asks each op of a schedule for its call; an op
    without this interface has no entry point, which is an error naming it.

    InfiR2 attaches the interface to its own ops and to `arith.constant` as
    external models (`infir2::registerRuntimeCallModels`), so the dialects do
    not depend on the runtime's ABI, and an embedder can give an op of its
    own a runtime entry point without touching the lowering.
  }];
  let methods = [
    InterfaceMethod<[{
        The call this op becomes; a call with no entry point for an op that is
        a view of its input (no code). Fails with a diagnostic on the op for a
        form the runtime has no entry point for.
      }],
      "::mlir::FailureOr<::infir2::rtir::RuntimeCall>", "getRuntimeCall">,
    InterfaceMethod<[{
        The one call of this op and `quantization`, the `fp8.quantize_dual` of
        its result scheduled right after it in the same `fp8.fused` region (a
        norm or SwiGLU and its quantization: one kernel on a GPU); none when
        the runtime has no such fused entry point.
      }],
      "::std::optional<::infir2::rtir::RuntimeCall>", "getFusedRuntimeCall",
      (ins "::mlir::Operation *":$quantization), [{}],
      [{ return std::nullopt; }]>
  ];
}

#endif // INFIR2_DIALECT_RUNTIME_IR_RUNTIMEINTERFACES_TD
