//===- Infir2Ops.td - Operations of the infir2 dialect -----*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The ops of the infir2 dialect. This file holds the model ops (the forward
// graph) and includes the gradient, optimizer and decoding ops, so that one
// Infir2Ops.h.inc / Infir2Ops.cpp.inc defines every op of the dialect.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_INFIR2_IR_INFIR2OPS_TD
#define INFIR2_DIALECT_INFIR2_IR_INFIR2OPS_TD

include "infir2/Dialect/Infir2/IR/Infir2Attrs.td"
include "infir2/Dialect/Infir2/IR/Infir2Interfaces.td"
include "infir2/Dialect/Infir2/IR/Infir2OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Lookups and GEMMs
//===----------------------------------------------------------------------===//

def Infir2_EmbeddingOp : Infir2_Op<"embedding", [Pure, DeclareOpInterfaceMethods<Infir2_GradientOpInterface>]> {
  let summary = "Gathers the rows of an embedding table selected by token ids.";
  let description = [{
    `result[i..., :] = table[ids[i...], :]` for a table of shape `[V, D]` and
    ids of any shape. The result has the ids' shape followed by `D` and the
    table's element type. Ids outside `[0, V)` are a runtime error.

    With `vocab_shards = N` (tensor parallelism's vocabulary-parallel
    embedding) the table is rank `r`'s rows `[r·V, (r+1)·V)` of a table `N`
    times as large, `r` its rank in the tensor-parallel group: ids are in
    `[0, N·V)`, and those outside the rank's rows give zero rows, so that the
    ranks' results sum (`infir2.tp_reduce`) to the whole table's lookup.

    ```mlir
    %h = infir2.embedding %table[%ids] : tensor<256x64xbf16>[tensor<2x32xi32>] -> tensor<2x32x64xbf16>
    %p = infir2.embedding %shard[%ids] {vocab_shards = 2 : i64} : tensor<128x64xbf16>[tensor<2x32xi32>] -> tensor<2x32x64xbf16>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$table, Infir2_IdTensor:$ids,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>, "1">:$vocab_shards);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` attr-dict `:` type($table) `[` type($ids) `]` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Infir2_MatmulOp : Infir2_Op<"matmul", [Pure, DeclareOpInterfaceMethods<Infir2_GradientOpInterface>,
    DeclareOpInterfaceMethods<Infir2_GemmOpInterface>, Infir2_AccumulatingOpInterface]> {
  let summary = "Multiplies two (batched) matrices, optionally transposing either.";
  let description = [{
    `lhs` has shape `[b..., M, K]` (`[b..., K, M]` with `transpose_lhs`) and
    `rhs` has shape `[b..., K, N]` (`[b..., N, K]` with `transpose_rhs`), or is
    a rank-2 matrix shared by every batch element, as a linear layer's weight
    is. The result has shape `[b..., M, N]`. Operands share one element type;
    the result has that type or `f32` (the product accumulates in FP32 either
    way).

    With an accumulator `acc` (of the result's type, `f32` or `bf16`) the
    result is `acc + op(lhs)·op(rhs)`, the product added in FP32 before the
    one rounding: a weight gradient added to its FP32 accumulator by the
    GEMM itself, in place when `acc` is not read afterwards, or a residual
    or a sum of two gradients in BF16 (`--infir2-fuse-accumulation` makes
    these).

    A linear layer `y = x·Wᵀ` on activations `[B, S, D]` and a weight `[N, D]`,
    and its weight gradient accumulated over tokens:

    ```mlir
    %y = infir2.matmul %x, %w {transpose_rhs} : tensor<2x32x64xbf16>, tensor<128x64xbf16> -> tensor<2x32x128xbf16>
    %g = infir2.matmul %dy, %x acc(%gw : tensor<128x64xf32>) {transpose_lhs} : tensor<64x128xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$lhs, Infir2_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs,
                       Optional<Infir2_FloatTensor>:$acc);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`acc` `(` $acc^ `:` type($acc) `)`)? attr-dict `:`
    type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalization, position embedding, attention
//===----------------------------------------------------------------------===//

def Infir2_RMSNormOp : Infir2_Op<"rms_norm",
    [Pure, DeclareOpInterfaceMethods<Infir2_GradientOpInterface>, AllTypesMatch<["input", "result"]>]> {
  let summary = "Normalizes the last dimension by its root mean square and scales it.";
  let description = [{
    `result = input / sqrt(mean(input², last dim) + epsilon) * weight`, where
    `weight` is a vector as long as the last dimension of `input`.

    ```mlir
    %n = infir2.rms_norm %h, %w {epsilon = 1.0e-06 : f64} : tensor<2x32x64xbf16>, tensor<64xbf16>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$input, Infir2_FloatTensor:$weight,
                       PositiveF64Attr:$epsilon);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

def Infir2_RopeOp : Infir2_Op<"rope",
    [Pure, DeclareOpInterfaceMethods<Infir2_GradientOpInterface>, AllTypesMatch<["input", "result"]>]> {
  let summary = "Applies rotary position embeddings to every head of a projection.";
  let description = [{
    `input` has shape `[..., S, H * head_dim]`: the heads of one projection laid
    side by side, as a linear layer produces them. Each head is rotated in the
    half-split (GPT-NeoX / Hugging Face Llama and Qwen2) convention: for
    `i < head_dim / 2`, the pair `(x[i], x[i + head_dim / 2])` is rotated by the
    angle `pos * theta^(-2i / head_dim)`. `positions` has shape `[S]` (shared by
    the batch) or the input's shape without its last dimension.

    ```mlir
    %q2 = infir2.rope %q, %pos {head_dim = 16 : i64, theta = 1.0e+06 : f64} : tensor<2x32x64xbf16>, tensor<32xi32>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$input, Infir2_IdTensor:$positions,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim,
                       PositiveF64Attr:$theta);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $positions attr-dict `:` type($input) `,` type($positions)
  }];
  let hasVerifier = 1;
}

def Infir2_AttentionOp : Infir2_Op<"attention", [Pure, DeclareOpInterfaceMethods<Infir2_GradientOpInterface>]> {
  let summary = "Computes (grouped-query) scaled dot-product attention over packed heads.";
  let description = [{
    `query` has shape `[B, S, num_heads * head_dim]`, `key` and `value` have
    shape `[B, S_kv, num_kv_heads * head_dim]`; `num_heads` must be a multiple
    of `num_kv_heads`, and query head `h` attends with key/value head
    `h / (num_heads / num_kv_heads)`. The result, shaped like `query`, is
    `softmax(scale · Q·Kᵀ + mask)·V` per head, with a causal mask when `causal`
    is set (which requires `S == S_kv`). `scale` defaults to
    `1 / sqrt(head_dim)`. This is the attention core the FP8 recipe always
    keeps in high precision.

    With `segments` (shape `[B, S]`, which requires `S == S_kv`), query `s`
    of sequence `b` sees key `t` only when `segments[b, s] == segments[b, t]`:
    samples packed into one sequence each attend to themselves alone, exactly
    as if each were a sequence of its own.

    ```mlir
    %o = infir2.attention %q, %k, %v {causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
        : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16> -> tensor<2x32x64xbf16>
    %p = infir2.attention %q, %k, %v segments %seg {causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
        : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>, tensor<2x32xi32> -> tensor<2x32x64xbf16>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$query, Infir2_FloatTensor:$key,
                       Infir2_FloatTensor:$value,
                       Optional<Infir2_IdTensor>:$segments,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_kv_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim,
                       OptionalAttr<PositiveF64Attr>:$scale,
                       UnitAttr:$causal);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`segments` $segments^)? attr-dict `:`
    type($query) `,` type($key) `,` type($value) (`,` type($segments)^)? `->`
    type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The softmax scale: the `scale` attribute, or 1/sqrt(head_dim).
    double getEffectiveScale();
  }];
}

//===----------------------------------------------------------------------===//
// Activations and elementwise arithmetic
//===----------------------------------------------------------------------===//

def Infir2_SiluOp : Infir2_Op<"silu",
    [Pure, DeclareOpInterfaceMethods<Infir2_GradientOpInterface>, Elementwise, SameOperandsAndResultType]> {
  let summary = "Applies the SiLU activation x·sigmoid(x) elementwise.";
  let description = [{
    ```mlir
    %y = infir2.silu %x : tensor<2x32x176xbf16>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$input);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Infir2_SwigluOp : Infir2_Op<"swiglu",
    [Pure, DeclareOpInterfaceMethods<Infir2_GradientOpInterface>, Elementwise, SameOperandsAndResultType]> {
  let summary = "Computes the SwiGLU gate silu(gate)·up elementwise.";
  let description = [{
    The gated activation of Llama/Qwen MLPs, `silu(gate) * up`, kept as one op
    so that the FP8 recipe can fuse the quantization of its output into it.

    ```mlir
    %a = infir2.swiglu %gate, %up : tensor<2x32x176xbf16>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$gate, Infir2_FloatTensor:$up);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
}

class Infir2_BroadcastBinaryOp<string mnemonic, string what>
    : Infir2_Op<mnemonic, [Pure, AllTypesMatch<["lhs", "result"]>,
                           DeclareOpInterfaceMethods<Infir2_GradientOpInterface>]> {
  let summary = "Computes the elementwise " # what # " of two tensors, broadcasting the right one.";
  let description = [{
    `rhs` has the shape of `lhs` or of a suffix of it (a bias or a scale vector
    broadcast over the leading dimensions); both share one element type. The
    result has the type of `lhs`.

    ```mlir
    %r = infir2.}] # mnemonic # [{ %x, %y : tensor<2x32x64xbf16>, tensor<2x32x64xbf16>
    %b = infir2.}] # mnemonic # [{ %x, %bias : tensor<2x32x64xbf16>, tensor<64xbf16>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$lhs, Infir2_FloatTensor:$rhs);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  let hasVerifier = 1;
}

def Infir2_AddOp : Infir2_BroadcastBinaryOp<"add", "sum">;
def Infir2_MulOp : Infir2_BroadcastBinaryOp<"mul", "product">;

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

def Infir2_CrossEntropyOp : Infir2_Op<"cross_entropy", [Pure, AttrSizedOperandSegments, DeclareOpInterfaceMethods<Infir2_GradientOpInterface>]> {
  let summary = "Computes the mean softmax cross-entropy of logits against target ids.";
  let description = [{
    `logits` has shape `[..., V]` and `targets` the same shape without `V`.
    Token `t` contributes `w_t · (logsumexp(logits[t]) - logits[t, targets[t]])`
    where `w_t` is the optional `loss_mask` (same shape as `targets`; `i1` or
    float), and 0 when `targets[t] == ignore_index` (default -100, as in
    PyTorch). The result is the sum of contributions divided by the sum of the
    weights of counted tokens (the mean over counted tokens), or 0 when no token
    counts. SFT masks prompt tokens with `loss_mask`. With a `divisor` (the
    whole batch's `infir2.loss_weight`) the sum is divided by it instead: the
    share of one chunk of tokens in the batch's mean (`--infir2-chunk-loss`).

    With `vocab_shards = N` (tensor parallelism's vocabulary-parallel loss)
    `logits` is rank `r`'s columns `[r·V, (r+1)·V)` of logits `N` times as
    wide, `r` its rank in the tensor-parallel group, and targets are in
    `[0, N·V)`: the op combines the ranks' per-token maxima, sums of
    exponentials and target logits over the group (a collective), and every
    rank gets the whole loss, without the logits ever being gathered.

    ```mlir
    %loss = infir2.cross_entropy %logits, %targets mask %m : tensor<2x32x256xf32>, tensor<2x32xi32>, tensor<2x32xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$logits, Infir2_IdTensor:$targets,
                       Optional<Infir2_MaskTensor>:$loss_mask,
                       Optional<Infir2_Scalar>:$divisor,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>, "1">:$vocab_shards);
  let results = (outs Infir2_Scalar:$result);
  let assemblyFormat = [{
    $logits `,` $targets (`mask` $loss_mask^)? (`divisor` $divisor^)? attr-dict
    `:` type($logits) `,` type($targets) (`,` type($loss_mask)^)? `->`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def Infir2_ReshapeOp : Infir2_Op<"reshape", [Pure, DeclareOpInterfaceMethods<Infir2_GradientOpInterface>]> {
  let summary = "Reinterprets a tensor with a new shape of the same number of elements.";
  let description = [{
    Row-major order is preserved. Reshaping to the same type folds away, and a
    reshape of a reshape folds to one reshape.

    ```mlir
    %r = infir2.reshape %x : tensor<2x32x64xbf16> -> tensor<64x64xbf16>
    ```
  }];
  let arguments = (ins Infir2_AnyTensor:$input);
  let results = (outs Infir2_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Infir2_TransposeOp : Infir2_Op<"transpose", [Pure, DeclareOpInterfaceMethods<Infir2_GradientOpInterface>]> {
  let summary = "Permutes the dimensions of a tensor.";
  let description = [{
    `result.shape[i] = input.shape[permutation[i]]`. The identity permutation
    folds away and a transpose of a transpose folds to one transpose.

    ```mlir
    %t = infir2.transpose %x [1, 0] : tensor<64x128xbf16> -> tensor<128x64xbf16>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$input,
                       DenseI64ArrayAttr:$permutation);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = [{
    $input $permutation attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Type and shape helpers of the backward pass
//===----------------------------------------------------------------------===//

def Infir2_ConvertOp : Infir2_Op<"convert",
    [Pure, Elementwise, SameOperandsAndResultShape,
     DeclareOpInterfaceMethods<Infir2_GradientOpInterface>]> {
  let summary = "Converts a tensor to another float element type, rounding to nearest even.";
  let description = [{
    Used where precisions meet: an FP32 gradient flowing into a BF16 value, a
    BF16 parameter gradient accumulated into an FP32 buffer.

    ```mlir
    %g32 = infir2.convert %g : tensor<256x64xbf16> -> tensor<256x64xf32>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$input);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Infir2_ReduceSumOp : Infir2_Op<"reduce_sum",
    [Pure, DeclareOpInterfaceMethods<Infir2_GradientOpInterface>,
     Infir2_AccumulatingOpInterface]> {
  let summary = "Sums a tensor over its leading dimensions down to a suffix of its shape.";
  let description = [{
    The result's shape must be a suffix of the input's (possibly empty, giving
    the sum of all elements); the leading dimensions are summed away. It is
    the gradient of a broadcast `add` or `mul` (a bias gradient sums over
    tokens). With an accumulator `acc` (`f32`, of the result's type) the
    result is `acc + ` the sum, rounded once: a bias gradient added to its
    FP32 accumulator.

    ```mlir
    %db = infir2.reduce_sum %dy : tensor<2x32x64xf32> -> tensor<64xf32>
    %gb = infir2.reduce_sum %dy acc(%acc : tensor<64xf32>) : tensor<2x32x64xbf16> -> tensor<64xf32>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$input,
                       Optional<Infir2_FloatTensor>:$acc);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`acc` `(` $acc^ `:` type($acc) `)`)? attr-dict `:` type($input)
    `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

include "infir2/Dialect/Infir2/IR/Infir2GradientOps.td"
include "infir2/Dialect/Infir2/IR/Infir2OptimizerOps.td"
include "infir2/Dialect/Infir2/IR/Infir2DecodeOps.td"
include "infir2/Dialect/Infir2/IR/Infir2ChunkOps.td"
include "infir2/Dialect/Infir2/IR/Infir2ParallelOps.td"

#endif // INFIR2_DIALECT_INFIR2_IR_INFIR2OPS_TD
