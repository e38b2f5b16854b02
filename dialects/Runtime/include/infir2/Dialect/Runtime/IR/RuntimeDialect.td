//===- RuntimeDialect.td - Planned steps as runtime calls --*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_RUNTIME_IR_RUNTIMEDIALECT_TD
#define INFIR2_DIALECT_RUNTIME_IR_RUNTIMEDIALECT_TD

include "mlir/IR/OpBase.td"

def Runtime_Dialect : Dialect {
  let name = "infir2rt";
  let cppNamespace = "::infir2::rt";
  let summary = "A planned training step: calls into the InfiR2 runtime on placed buffers.";
  let description = [{
    What `infir2-compile` makes of a step once memory is planned: every
    tensor is a `#infir2rt.buffer` (a region — the persistent state or the
    step's scratch arena —, a byte offset and the tensor type), and every op
    is an `infir2rt.call` of one runtime entry point (a kernel, a GEMM, a
    quantizer, a collective) as `runtime/include/infir2/runtime/ABI.def`
    lists them. The verifier holds calls to that list. `infir2-compile
    --emit=plan` prints this form; the lowering to the LLVM dialect turns
    each call into a call of `infir2rt_<entry>` with a constant descriptor.
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
    /// The module attribute holding the manifest a trainer reads.
    static constexpr ::llvm::StringLiteral getManifestAttrName() {
      return ::llvm::StringLiteral("infir2rt.manifest");
    }
  }];
}

class RT_Op<string mnemonic, list<Trait> traits = []>
    : Op<Runtime_Dialect, mnemonic, traits>;

#endif // INFIR2_DIALECT_RUNTIME_IR_RUNTIMEDIALECT_TD
