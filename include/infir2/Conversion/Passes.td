//===- Passes.td - From a planned step to the LLVM dialect -*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_CONVERSION_PASSES_TD
#define INFIR2_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToRuntimePass : Pass<"infir2-lower-to-runtime", "mlir::ModuleOp"> {
  let summary = "Rewrites each planned step as infir2rt.call ops on its planned buffers.";
  let description = [{
    Runs after `--infir2-plan-memory`. Each planned function becomes a
    function named by its `infir2rt.symbol` that takes nothing and holds one
    `infir2rt.call` per op of its schedule (the runtime entry point of
    `ABI.def`, its buffers, inputs first, and its attribute values), then a
    `copy` of each returned value into its state slot. A reshape is a view
    and has no call; a norm or SwiGLU whose result an `fp8.quantize_dual` in
    the same `fp8.fused` region reads becomes one fused call
    (`rms_norm_quantize_dual`, `swiglu_quantize_dual`). Consecutive
    `fp8.quantize_dual` ops with the same attributes whose inputs and
    outputs do not overlap become one call whose operands repeat by group
    (the optimizer step's FP8 weight-cache refresh is one call), and so do
    consecutive `infir2.all_reduce` buckets whose sums are all in place.
    Each call names the op it comes from and its location (a batched call,
    the first op and how many more), for the runtime's error messages.

    The module's `#infir2rt.plan` becomes `infir2rt.manifest`: the JSON the
    trainer reads at start-up (the runtime ABI version, the state layout, the
    batch geometry and the optimizer's settings). Functions that were not
    planned are not part of a trainer and are removed.

    ```mlir
    func.func @infir2_train_step() {
      infir2rt.call "embedding" [#infir2rt.buffer<state, 0, tensor<256x256xbf16>>,
          #infir2rt.buffer<state, 131072, tensor<4x128xi32>>,
          #infir2rt.buffer<scratch, 0, tensor<4x128x256xbf16>>]
          attributes [] at "infir2.embedding at model.mlir:10:8"
      ...
    ```
  }];
  let dependentDialects = ["infir2::rtir::RuntimeDialect",
                           "mlir::func::FuncDialect"];
}

def ConvertInfir2rtToLLVMPass
    : Pass<"convert-infir2rt-to-llvm", "mlir::ModuleOp"> {
  let summary = "Lowers infir2rt calls to LLVM dialect calls of the runtime's entry points.";
  let description = [{
    Each function of `infir2rt.call` ops becomes an `llvm.func` taking the
    runtime context (`!llvm.ptr`) and returning an `i32` status. Each call
    becomes a call of `infir2rt_<entry>(ctx, desc, where)` with a constant
    descriptor (per buffer: region, element type code, rank, offset, element
    count and shape; then the attribute values as FP64 bits, in the layout of
    `runtime/include/infir2/runtime/ABI.h`) and the op's location as a
    constant string; a non-zero status returns at once. The module's
    `infir2rt.manifest` becomes the exported constant
    `infir2_model_manifest`.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // INFIR2_CONVERSION_PASSES_TD
