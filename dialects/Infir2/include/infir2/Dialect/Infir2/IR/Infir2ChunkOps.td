//===- Infir2ChunkOps.td - Ops of a step computed in chunks -*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The ops --infir2-chunk-loss builds so that the LM head, the loss and their
// gradients run a chunk of tokens at a time: row ranges of a tensor, rows
// put back together, and the divisor of a loss split into chunks. The
// memory planner makes slices and concatenations views (no copy); they are
// not differentiable: the chunking runs after the backward pass is built.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_INFIR2_IR_INFIR2CHUNKOPS_TD
#define INFIR2_DIALECT_INFIR2_IR_INFIR2CHUNKOPS_TD

include "infir2/Dialect/Infir2/IR/Infir2OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Infir2_SliceOp : Infir2_Op<"slice", [Pure]> {
  let summary = "Rows [start, start + n) of a tensor's leading dimension.";
  let description = [{
    The result has the input's shape with `n` rows in place of the leading
    dimension. In row-major order the rows are contiguous, so the memory
    planner makes the result a view of the input at an offset: no copy.

    ```mlir
    %h1 = infir2.slice %h [128] : tensor<512x64xbf16> -> tensor<128x64xbf16>
    ```
  }];
  let arguments = (ins Infir2_AnyTensor:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$start);
  let results = (outs Infir2_AnyTensor:$result);
  let assemblyFormat = [{
    $input `[` $start `]` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Infir2_ConcatOp : Infir2_Op<"concat", [Pure]> {
  let summary = "Stacks tensors along their leading dimension.";
  let description = [{
    The operands share their element type and every dimension but the
    leading one; the result's leading dimension is the sum of theirs. The
    memory planner places each operand where it lies in the result, so that
    its producer writes it there and nothing is copied; an operand it cannot
    place so (a function argument, a view of another tensor, an operand used
    twice or read by another op) is an error when the step is planned.

    ```mlir
    %dh = infir2.concat %d0, %d1 : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<256x64xbf16>
    ```
  }];
  let arguments = (ins Variadic<Infir2_AnyTensor>:$inputs);
  let results = (outs Infir2_AnyTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Infir2_LossWeightOp : Infir2_Op<"loss_weight", [Pure]> {
  let summary = "The sum of the tokens' weights in a cross-entropy: its mean's divisor.";
  let description = [{
    `Σ_t w_t` with `w_t` as in `infir2.cross_entropy`: the mask's value (1
    without a mask), 0 where the target is `ignore_index`. A loss computed a
    chunk of tokens at a time divides every chunk by this sum of the whole
    batch (`cross_entropy ... divisor %w`), so that the chunks add up to the
    mean over all tokens.

    ```mlir
    %w = infir2.loss_weight %targets mask %m : tensor<512xi32>, tensor<512xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Infir2_IdTensor:$targets,
                       Optional<Infir2_MaskTensor>:$loss_mask,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Infir2_Scalar:$result);
  let assemblyFormat = [{
    $targets (`mask` $loss_mask^)? attr-dict `:` type($targets)
    (`,` type($loss_mask)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // INFIR2_DIALECT_INFIR2_IR_INFIR2CHUNKOPS_TD
