//===- Infir2ParallelOps.td - Tensor-parallel region ops ---*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The two ops --infir2-tensor-parallel puts where a layer's computation
// enters and leaves the ranks of a tensor-parallel group (Megatron-LM's `f`
// and `g`). Between them, values are one rank's shard (a slice of heads or
// of the MLP's width) or one rank's partial sum; outside, every rank holds
// the same tensor. Each is the other's gradient, so the backward pass
// derived by --infir2-autodiff has its collectives where they must be.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_INFIR2_IR_INFIR2PARALLELOPS_TD
#define INFIR2_DIALECT_INFIR2_IR_INFIR2PARALLELOPS_TD

include "infir2/Dialect/Infir2/IR/Infir2OpBase.td"
include "infir2/Dialect/Infir2/IR/Infir2Interfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Infir2_TPCopyOp : Infir2_Op<"tp_copy", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Infir2_GradientOpInterface>]> {
  let summary = "A replicated tensor entering a tensor-parallel region.";
  let description = [{
    The identity: every rank of the group of `size` ranks holds the same
    tensor and reads it whole. Its gradient is `infir2.tp_reduce` of the
    incoming gradient: each rank's shard of the layer contributes a partial
    gradient of the input, and the input's gradient is their sum.

    ```mlir
    %xin = infir2.tp_copy %x {size = 2 : i64} : tensor<4x128x256xbf16>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$input,
                       ConfinedAttr<I64Attr, [IntMinValue<2>]>:$size);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Infir2_TPReduceOp : Infir2_Op<"tp_reduce", [SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Infir2_GradientOpInterface>]> {
  let summary = "Sums a tensor over the ranks of a tensor-parallel group.";
  let description = [{
    Each rank's operand is its partial sum (a row-parallel GEMM's product of
    its slice of the contraction); every rank receives the sum over the
    group's `size` ranks. Its gradient is the identity: the sum's gradient
    is the same on every rank. It talks to the other ranks, so it is neither
    hoisted, merged nor removed.

    ```mlir
    %o = infir2.tp_reduce %partial {size = 2 : i64} : tensor<4x128x256xbf16>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$input,
                       ConfinedAttr<I64Attr, [IntMinValue<2>]>:$size);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Infir2_TPAllGatherOp : Infir2_Op<"tp_all_gather", [
    DeclareOpInterfaceMethods<Infir2_GradientOpInterface>]> {
  let summary = "Puts the ranks' slices of a dimension back together.";
  let description = [{
    Sequence parallelism's entry into a tensor-parallel region: each rank of
    the group of `size` ranks holds its slice of dimension `dim` (the
    sequence), and every rank receives the whole tensor, the slices in rank
    order. Its gradient is `infir2.tp_reduce_scatter` of the incoming
    gradient: the ranks' partial gradients summed, each rank keeping its
    slice.

    ```mlir
    %x = infir2.tp_all_gather %xs {size = 2 : i64, dim = 1 : i64} : tensor<4x64x256xbf16> -> tensor<4x128x256xbf16>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$input,
                       ConfinedAttr<I64Attr, [IntMinValue<2>]>:$size,
                       ConfinedAttr<I64Attr, [IntMinValue<0>]>:$dim);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Infir2_TPReduceScatterOp : Infir2_Op<"tp_reduce_scatter", [
    DeclareOpInterfaceMethods<Infir2_GradientOpInterface>]> {
  let summary = "Sums partial tensors over the ranks, each keeping its slice.";
  let description = [{
    Sequence parallelism's exit from a tensor-parallel region: each rank's
    operand is its partial sum of the whole tensor; rank `r` receives slice
    `r` of dimension `dim` of the sum over the group's `size` ranks (added
    in FP32, rounded once). Its gradient is `infir2.tp_all_gather`.

    ```mlir
    %h = infir2.tp_reduce_scatter %partial {size = 2 : i64, dim = 1 : i64} : tensor<4x128x256xbf16> -> tensor<4x64x256xbf16>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$input,
                       ConfinedAttr<I64Attr, [IntMinValue<2>]>:$size,
                       ConfinedAttr<I64Attr, [IntMinValue<0>]>:$dim);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

#endif // INFIR2_DIALECT_INFIR2_IR_INFIR2PARALLELOPS_TD
