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
  // The IR of runtime calls; the runtime library itself is infir2::rt.
  let cppNamespace = "::infir2::rtir";
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
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
    /// The module attribute holding the manifest a trainer reads (JSON).
    static constexpr ::llvm::StringLiteral getManifestAttrName() {
      return ::llvm::StringLiteral("infir2rt.manifest");
    }
    /// The module's #infir2rt.plan.
    static constexpr ::llvm::StringLiteral getPlanAttrName() {
      return ::llvm::StringLiteral("infir2rt.plan");
    }
    /// The C symbols of the steps a trainer calls (runtime ABI.h).
    static ::llvm::ArrayRef<::llvm::StringRef> getStepSymbols() {
      static const ::llvm::StringRef symbols[] = {
          "infir2_train_step", "infir2_optimizer_step", "infir2_eval_step",
          "infir2_decode_step", "infir2_quantize_weights"};
      return symbols;
    }
    /// On a planned function: the C symbol its step is exported as (one of
    /// getStepSymbols()).
    static constexpr ::llvm::StringLiteral getSymbolAttrName() {
      return ::llvm::StringLiteral("infir2rt.symbol");
    }
    /// On a planned function: the bytes of its scratch arena.
    static constexpr ::llvm::StringLiteral getScratchBytesAttrName() {
      return ::llvm::StringLiteral("infir2rt.scratch_bytes");
    }
    /// On a planned function's arguments: where each lives.
    static constexpr ::llvm::StringLiteral getBufferAttrName() {
      return ::llvm::StringLiteral("infir2rt.buffer");
    }
    /// On each op of a planned function: where each result lives.
    static constexpr ::llvm::StringLiteral getBuffersAttrName() {
      return ::llvm::StringLiteral("infir2rt.buffers");
    }
    /// On a planned function's return: the state slot each result goes to.
    static constexpr ::llvm::StringLiteral getCopyOutAttrName() {
      return ::llvm::StringLiteral("infir2rt.copy_out");
    }
  }];
}

class RT_Op<string mnemonic, list<Trait> traits = []>
    : Op<Runtime_Dialect, mnemonic, traits>;

#endif // INFIR2_DIALECT_RUNTIME_IR_RUNTIMEDIALECT_TD
