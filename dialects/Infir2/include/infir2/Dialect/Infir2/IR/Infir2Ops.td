//===- Infir2Ops.td - Operations of the infir2 dialect -----*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_INFIR2_IR_INFIR2OPS_TD
#define INFIR2_DIALECT_INFIR2_IR_INFIR2OPS_TD

include "infir2/Dialect/Infir2/IR/Infir2Dialect.td"
include "infir2/Dialect/Infir2/IR/Infir2Attrs.td"
include "infir2/Dialect/Infir2/IR/Infir2Interfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Model tensors hold high-precision floats; FP8 appears only where the recipe
// inserts `fp8` ops.
def Infir2_FloatTensor : StaticShapeTensorOf<[BF16, F16, F32, F64]>;
def Infir2_IdTensor : StaticShapeTensorOf<[I32, I64]>;
def Infir2_MaskTensor : StaticShapeTensorOf<[I1, BF16, F16, F32, F64]>;
// A 0-d f32 tensor: the loss, a learning rate, a norm.
def Infir2_Scalar : 0DTensorOf<[F32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;

def Infir2_FloatPositive : AttrConstraint<
    CPred<"::llvm::cast<::mlir::FloatAttr>($_self).getValueAsDouble() > 0.0">,
    "whose value is positive">;
def PositiveF64Attr : ConfinedAttr<F64Attr, [Infir2_FloatPositive]>;

//===----------------------------------------------------------------------===//
// Lookups and GEMMs
//===----------------------------------------------------------------------===//

def Infir2_EmbeddingOp : Infir2_Op<"embedding", [Pure, DeclareOpInterfaceMethods<Infir2_GradientOpInterface>]> {
  let summary = "Gathers the rows of an embedding table selected by token ids.";
  let description = [{
    `result[i..., :] = table[ids[i...], :]` for a table of shape `[V, D]` and
    ids of any shape. The result has the ids' shape followed by `D` and the
    table's element type. Ids outside `[0, V)` are a runtime error.

    ```mlir
    %h = infir2.embedding %table[%ids] : tensor<256x64xbf16>[tensor<2x32xi32>] -> tensor<2x32x64xbf16>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$table, Infir2_IdTensor:$ids);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` attr-dict `:` type($table) `[` type($ids) `]` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Infir2_MatmulOp : Infir2_Op<"matmul", [Pure, DeclareOpInterfaceMethods<Infir2_GradientOpInterface>,
    DeclareOpInterfaceMethods<Infir2_GemmOpInterface>]> {
  let summary = "Multiplies two (batched) matrices, optionally transposing either.";
  let description = [{
    `lhs` has shape `[b..., M, K]` (`[b..., K, M]` with `transpose_lhs`) and
    `rhs` has shape `[b..., K, N]` (`[b..., N, K]` with `transpose_rhs`), or is
    a rank-2 matrix shared by every batch element, as a linear layer's weight
    is. The result has shape `[b..., M, N]`. Operands share one element type;
    the result has that type or `f32` (the product accumulates in FP32 either
    way).

    A linear layer `y = x·Wᵀ` on activations `[B, S, D]` and a weight `[N, D]`:

    ```mlir
    %y = infir2.matmul %x, %w {transpose_rhs} : tensor<2x32x64xbf16>, tensor<128x64xbf16> -> tensor<2x32x128xbf16>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$lhs, Infir2_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
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

    ```mlir
    %o = infir2.attention %q, %k, %v {causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
        : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16> -> tensor<2x32x64xbf16>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$query, Infir2_FloatTensor:$key,
                       Infir2_FloatTensor:$value,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_kv_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim,
                       OptionalAttr<PositiveF64Attr>:$scale,
                       UnitAttr:$causal);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value attr-dict `:` type($query) `,` type($key) `,`
    type($value) `->` type($result)
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

def Infir2_CrossEntropyOp : Infir2_Op<"cross_entropy", [Pure, DeclareOpInterfaceMethods<Infir2_GradientOpInterface>]> {
  let summary = "Computes the mean softmax cross-entropy of logits against target ids.";
  let description = [{
    `logits` has shape `[..., V]` and `targets` the same shape without `V`.
    Token `t` contributes `w_t · (logsumexp(logits[t]) - logits[t, targets[t]])`
    where `w_t` is the optional `loss_mask` (same shape as `targets`; `i1` or
    float), and 0 when `targets[t] == ignore_index` (default -100, as in
    PyTorch). The result is the sum of contributions divided by the sum of the
    weights of counted tokens (the mean over counted tokens), or 0 when no token
    counts. SFT masks prompt tokens with `loss_mask`.

    ```mlir
    %loss = infir2.cross_entropy %logits, %targets mask %m : tensor<2x32x256xf32>, tensor<2x32xi32>, tensor<2x32xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$logits, Infir2_IdTensor:$targets,
                       Optional<Infir2_MaskTensor>:$loss_mask,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Infir2_Scalar:$result);
  let assemblyFormat = [{
    $logits `,` $targets (`mask` $loss_mask^)? attr-dict `:` type($logits) `,`
    type($targets) (`,` type($loss_mask)^)? `->` type($result)
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
  let arguments = (ins Infir2_FloatTensor:$input);
  let results = (outs Infir2_FloatTensor:$result);
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
    [Pure, DeclareOpInterfaceMethods<Infir2_GradientOpInterface>]> {
  let summary = "Sums a tensor over its leading dimensions down to a suffix of its shape.";
  let description = [{
    The result's shape must be a suffix of the input's (possibly empty, giving
    the sum of all elements); the leading dimensions are summed away. It is
    the gradient of a broadcast `add` or `mul` (a bias gradient sums over
    tokens).

    ```mlir
    %db = infir2.reduce_sum %dy : tensor<2x32x64xf32> -> tensor<64xf32>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$input);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

def Infir2_SiluGradOp : Infir2_Op<"silu_grad",
    [Pure, SameOperandsAndResultType]> {
  let summary = "Computes the gradient of silu: dy·(s + x·s·(1 − s)) with s = sigmoid(x).";
  let description = [{
    ```mlir
    %dx = infir2.silu_grad %x, %dy : tensor<2x32x176xf32>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$input, Infir2_FloatTensor:$result_grad);
  let results = (outs Infir2_FloatTensor:$input_grad);
  let assemblyFormat = "$input `,` $result_grad attr-dict `:` type($input)";
}

def Infir2_SwigluGradOp : Infir2_Op<"swiglu_grad",
    [Pure, AllTypesMatch<["gate", "up", "result_grad", "gate_grad", "up_grad"]>]> {
  let summary = "Computes the gradients of swiglu for its gate and up inputs.";
  let description = [{
    `gate_grad = dy · up · silu'(gate)`, `up_grad = dy · silu(gate)`.

    ```mlir
    %dg, %du = infir2.swiglu_grad %g, %u, %dy : tensor<2x32x176xf32>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$gate, Infir2_FloatTensor:$up,
                       Infir2_FloatTensor:$result_grad);
  let results = (outs Infir2_FloatTensor:$gate_grad, Infir2_FloatTensor:$up_grad);
  let assemblyFormat = "$gate `,` $up `,` $result_grad attr-dict `:` type($gate)";
}

def Infir2_RMSNormGradOp : Infir2_Op<"rms_norm_grad",
    [Pure, AllTypesMatch<["input", "result_grad", "input_grad"]>,
     AllTypesMatch<["weight", "weight_grad"]>]> {
  let summary = "Computes the gradients of rms_norm for its input and weight.";
  let description = [{
    With `r = 1 / sqrt(mean(x²) + epsilon)` per row of the last dimension:
    `weight_grad = Σ_rows dy · x · r` and
    `input_grad = r · (w · dy) − r³ / D · x · Σ (w · dy · x)`.

    ```mlir
    %dx, %dw = infir2.rms_norm_grad %x, %w, %dy {epsilon = 1.0e-06 : f64} : tensor<2x32x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$input, Infir2_FloatTensor:$weight,
                       Infir2_FloatTensor:$result_grad, PositiveF64Attr:$epsilon);
  let results = (outs Infir2_FloatTensor:$input_grad, Infir2_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $result_grad attr-dict `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

def Infir2_RopeGradOp : Infir2_Op<"rope_grad",
    [Pure, AllTypesMatch<["result_grad", "input_grad"]>]> {
  let summary = "Computes the gradient of rope: the rotation by the negated angles.";
  let description = [{
    RoPE is an orthogonal rotation per pair of dimensions, so its gradient is
    the inverse rotation of the incoming gradient; attributes and shapes are
    those of the forward `rope`.

    ```mlir
    %dq = infir2.rope_grad %dy, %pos {head_dim = 16 : i64, theta = 1.0e+06 : f64} : tensor<2x32x64xf32>, tensor<32xi32>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$result_grad, Infir2_IdTensor:$positions,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim,
                       PositiveF64Attr:$theta);
  let results = (outs Infir2_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $result_grad `,` $positions attr-dict `:` type($result_grad) `,` type($positions)
  }];
  let hasVerifier = 1;
}

def Infir2_AttentionGradOp : Infir2_Op<"attention_grad",
    [Pure, AllTypesMatch<["query", "result_grad", "query_grad"]>,
     AllTypesMatch<["key", "key_grad"]>, AllTypesMatch<["value", "value_grad"]>]> {
  let summary = "Computes the gradients of attention for its query, key and value.";
  let description = [{
    Recomputes the attention probabilities from `query` and `key` (as
    flash-attention's backward does, so they are never stored) and
    back-propagates `result_grad`. Attributes and shapes are those of the
    forward `attention`; the gradients have the types of `query`, `key` and
    `value`.

    ```mlir
    %dq, %dk, %dv = infir2.attention_grad %q, %k, %v, %do {causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
        : tensor<2x32x64xf32>, tensor<2x32x32xf32>, tensor<2x32x32xf32>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$query, Infir2_FloatTensor:$key,
                       Infir2_FloatTensor:$value, Infir2_FloatTensor:$result_grad,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_kv_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim,
                       OptionalAttr<PositiveF64Attr>:$scale,
                       UnitAttr:$causal);
  let results = (outs Infir2_FloatTensor:$query_grad, Infir2_FloatTensor:$key_grad,
                      Infir2_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $result_grad attr-dict `:` type($query) `,`
    type($key) `,` type($value)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The softmax scale: the `scale` attribute, or 1/sqrt(head_dim).
    double getEffectiveScale();
  }];
}

def Infir2_CrossEntropyGradOp : Infir2_Op<"cross_entropy_grad",
    [Pure, AllTypesMatch<["logits", "logits_grad"]>]> {
  let summary = "Computes the gradient of cross_entropy with respect to the logits.";
  let description = [{
    `logits_grad[t, i] = loss_grad · w_t / W · (softmax(logits[t])_i − [i == targets[t]])`
    with `w_t` and `W = Σ w_t` as in the forward op (0 for ignored tokens;
    all zero when no token counts). The result has the type of `logits`.

    ```mlir
    %dl = infir2.cross_entropy_grad %logits, %targets, %dloss mask %m
        : tensor<2x32x256xf32>, tensor<2x32xi32>, tensor<f32>, tensor<2x32xf32>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$logits, Infir2_IdTensor:$targets,
                       Optional<Infir2_MaskTensor>:$loss_mask,
                       Infir2_Scalar:$loss_grad,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Infir2_FloatTensor:$logits_grad);
  let assemblyFormat = [{
    $logits `,` $targets `,` $loss_grad (`mask` $loss_mask^)? attr-dict `:`
    type($logits) `,` type($targets) `,` type($loss_grad) (`,` type($loss_mask)^)?
  }];
  let hasVerifier = 1;
}

def Infir2_EmbeddingGradOp : Infir2_Op<"embedding_grad", [Pure]> {
  let summary = "Scatter-adds the gradients of looked-up rows into a table-shaped gradient.";
  let description = [{
    `result[v, :] = Σ_{t : ids[t] == v} result_grad[t, :]`; the result has
    the table's shape `[V, D]` and the gradient's element type.

    ```mlir
    %dt = infir2.embedding_grad %ids, %dy : tensor<2x32xi32>, tensor<2x32x64xf32> -> tensor<256x64xf32>
    ```
  }];
  let arguments = (ins Infir2_IdTensor:$ids, Infir2_FloatTensor:$result_grad);
  let results = (outs Infir2_FloatTensor:$table_grad);
  let assemblyFormat = [{
    $ids `,` $result_grad attr-dict `:` type($ids) `,` type($result_grad) `->` type($table_grad)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

def Infir2_FP32Tensor : StaticShapeTensorOf<[F32]>;

def Infir2_GlobalNormOp : Infir2_Op<"global_norm"> {
  let summary = "Computes the L2 norm of a list of tensors, each scaled by a common factor.";
  let description = [{
    `sqrt(Σ_i ||scale · grads_i||²)`: the norm of the averaged gradient that
    global-norm clipping compares against `max_grad_norm`.

    With `across_ranks`, each rank of the data-parallel group holds a
    disjoint shard of the gradients (ZeRO-1, see `infir2.reduce_scatter`):
    the sums of squares of all ranks are added before the square root, so
    every rank gets the norm of the whole gradient. That form communicates;
    the op is therefore not `Pure` (it is never dead in an optimizer step
    anyway).

    ```mlir
    %n = infir2.global_norm %g0, %g1 scale %s : tensor<8x4xf32>, tensor<4xf32>
    %m = infir2.global_norm %s0 scale %s {across_ranks} : tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Variadic<Infir2_FP32Tensor>:$grads, Infir2_Scalar:$scale,
                       UnitAttr:$across_ranks);
  let results = (outs Infir2_Scalar:$norm);
  let assemblyFormat = "$grads `scale` $scale attr-dict `:` type($grads)";
  let hasVerifier = 1;
}

def Infir2_AllReduceOp : Infir2_Op<"all_reduce", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Sums FP32 tensors across the data-parallel ranks (one bucket).";
  let description = [{
    Each result is the sum, over all ranks of the data-parallel group, of the
    corresponding operand; every rank receives the same sums. The operands
    form one communication bucket: a backend packs them into one buffer and
    makes one collective call. With a single rank the results equal the
    operands.

    `--infir2-data-parallel` inserts these ops on the gradient accumulators
    at the top of `@optimizer_step`, so that the communication is visible in
    the IR. It has side effects (it talks to the other ranks), so it is
    neither hoisted, merged nor removed.

    ```mlir
    %r0, %r1 = infir2.all_reduce %g0, %g1 : tensor<256x256xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Variadic<Infir2_FP32Tensor>:$inputs);
  let results = (outs Variadic<Infir2_FP32Tensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

def Infir2_ReduceScatterOp : Infir2_Op<"reduce_scatter"> {
  let summary = "Sums FP32 tensors across the ranks and keeps this rank's rows (ZeRO-1).";
  let description = [{
    The sum over the `world_size` ranks of each operand, as with
    `infir2.all_reduce`, of which each rank receives only its shard: the
    rows (leading dimension) `[r·s, min(d0, (r+1)·s))` for rank `r`, with
    `s = ceil(d0 / world_size)` rows per shard. A shard that runs past `d0`
    is padded with zero rows, so every rank's shard has the same type and
    the compiled state layout does not depend on the rank. The operands form
    one communication bucket.

    `--infir2-data-parallel="zero1=true world-size=N"` inserts these ops on
    the gradient accumulators at the top of `@optimizer_step`.

    ```mlir
    %s0, %s1 = infir2.reduce_scatter %g0, %g1 {world_size = 2 : i64}
        : tensor<256x64xf32>, tensor<5xf32> -> tensor<128x64xf32>, tensor<3xf32>
    ```
  }];
  let arguments = (ins Variadic<Infir2_FP32Tensor>:$inputs,
                       ConfinedAttr<I64Attr, [IntPositive]>:$world_size);
  let results = (outs Variadic<Infir2_FP32Tensor>:$results);
  let assemblyFormat =
      "$inputs attr-dict `:` type($inputs) `->` type($results)";
  let hasVerifier = 1;
}

def Infir2_AllGatherOp : Infir2_Op<"all_gather"> {
  let summary = "Concatenates every rank's row shard of tensors (ZeRO-1).";
  let description = [{
    The inverse of `infir2.reduce_scatter`'s sharding: each operand is this
    rank's shard of `s` rows of a tensor of `d0` rows
    (`s = ceil(d0 / world_size)`); each result is the whole tensor, rank
    `r`'s shard giving rows `[r·s, min(d0, (r+1)·s))` (padding rows are
    dropped). Every rank receives the same result. The operands form one
    communication bucket.

    `--infir2-data-parallel="zero1=true"` gathers the updated working
    weights with it at the end of `@optimizer_step`.

    ```mlir
    %w = infir2.all_gather %shard {world_size = 2 : i64}
        : tensor<3xbf16> -> tensor<5xbf16>
    ```
  }];
  let arguments = (ins Variadic<Infir2_FloatTensor>:$inputs,
                       ConfinedAttr<I64Attr, [IntPositive]>:$world_size);
  let results = (outs Variadic<Infir2_FloatTensor>:$results);
  let assemblyFormat =
      "$inputs attr-dict `:` type($inputs) `->` type($results)";
  let hasVerifier = 1;
}

class Infir2_UpdateOp<string mnemonic, list<Trait> traits = []>
    : Infir2_Op<mnemonic, !listconcat([Pure], traits)> {
  code clipDescription = [{
    The gradient used is `g · grad_scale · clip` with
    `clip = min(1, max_grad_norm / (grad_norm + 1e-6))` when `max_grad_norm`
    is positive and 1 otherwise (global-norm clipping, as PyTorch's
    `clip_grad_norm_`). `grad_scale` averages gradients accumulated over
    micro-batches (1/K); `learning_rate` is a runtime input so schedules need
    no recompilation.
  }];
}

def Infir2_AdamWOp : Infir2_UpdateOp<"adamw",
    [AllTypesMatch<["param", "grad", "moment1", "moment2", "new_param",
                    "new_moment1", "new_moment2"]>]> {
  let summary = "Applies one AdamW step to an FP32 master weight and its moments.";
  let description = [{
    With `g` the scaled, clipped gradient and `t = step` (1-based):
    `m' = β1·m + (1 − β1)·g`, `v' = β2·v + (1 − β2)·g²`,
    `p' = p − lr·(weight_decay·p + (m'/(1 − β1ᵗ)) / (sqrt(v'/(1 − β2ᵗ)) + ε))`
    (decoupled weight decay, as `torch.optim.AdamW`).
  }] # clipDescription # [{

    ```mlir
    %p2, %m2, %v2 = infir2.adamw %p, %g, %m, %v, %lr, %step, %scale, %norm
        {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64,
         weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<8x4xf32>
    ```
  }];
  let arguments = (ins Infir2_FP32Tensor:$param, Infir2_FP32Tensor:$grad,
                       Infir2_FP32Tensor:$moment1, Infir2_FP32Tensor:$moment2,
                       Infir2_Scalar:$learning_rate, Infir2_Scalar:$step,
                       Infir2_Scalar:$grad_scale, Infir2_Scalar:$grad_norm,
                       F64Attr:$beta1, F64Attr:$beta2, PositiveF64Attr:$epsilon,
                       F64Attr:$weight_decay, F64Attr:$max_grad_norm);
  let results = (outs Infir2_FP32Tensor:$new_param, Infir2_FP32Tensor:$new_moment1,
                      Infir2_FP32Tensor:$new_moment2);
  let assemblyFormat = [{
    $param `,` $grad `,` $moment1 `,` $moment2 `,` $learning_rate `,` $step `,`
    $grad_scale `,` $grad_norm attr-dict `:` type($param)
  }];
  let hasVerifier = 1;
}

def Infir2_SGDOp : Infir2_UpdateOp<"sgd",
    [AllTypesMatch<["param", "grad", "new_param"]>]> {
  let summary = "Applies one step of plain SGD with weight decay to an FP32 master weight.";
  let description = [{
    `p' = p − lr·(g + weight_decay·p)`, with `g` the scaled, clipped gradient.
  }] # clipDescription # [{

    ```mlir
    %p2 = infir2.sgd %p, %g, %lr, %scale, %norm {weight_decay = 0.0 : f64, max_grad_norm = 0.0 : f64} : tensor<8x4xf32>
    ```
  }];
  let arguments = (ins Infir2_FP32Tensor:$param, Infir2_FP32Tensor:$grad,
                       Infir2_Scalar:$learning_rate, Infir2_Scalar:$grad_scale,
                       Infir2_Scalar:$grad_norm, F64Attr:$weight_decay,
                       F64Attr:$max_grad_norm);
  let results = (outs Infir2_FP32Tensor:$new_param);
  let assemblyFormat = [{
    $param `,` $grad `,` $learning_rate `,` $grad_scale `,` $grad_norm attr-dict
    `:` type($param)
  }];
  let hasVerifier = 1;
}

#endif // INFIR2_DIALECT_INFIR2_IR_INFIR2OPS_TD
