//===- Infir2GradientOps.td - Gradient ops of infir2 -------*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The *_grad ops: the gradient rules of the model ops whose gradients are not
// compositions of other model ops (matmul's gradient is two matmuls, add's a
// reduce_sum). Autodiff emits them through GradientOpInterface.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_INFIR2_IR_INFIR2GRADIENTOPS_TD
#define INFIR2_DIALECT_INFIR2_IR_INFIR2GRADIENTOPS_TD

include "infir2/Dialect/Infir2/IR/Infir2Interfaces.td"
include "infir2/Dialect/Infir2/IR/Infir2OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

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
    [Pure, AttrSizedOperandSegments,
     AllTypesMatch<["input", "result_grad", "input_grad"]>,
     DeclareOpInterfaceMethods<InferTypeOpInterface>,
     DeclareOpInterfaceMethods<Infir2_AccumulatingOpInterface,
                               ["getAccumulatedResult", "cloneWithAccumulator"]>]> {
  let summary = "Computes the gradients of rms_norm for its input and weight.";
  let description = [{
    With `r = 1 / sqrt(mean(x²) + epsilon)` per row of the last dimension:
    `weight_grad = Σ_rows dy · x · r` and
    `input_grad = r · (w · dy) − r³ / D · x · Σ (w · dy · x)`.
    `weight_grad` has the weight's type; with an accumulator `acc` (`f32`,
    of the weight's shape) it is `acc + Σ_rows …`, rounded once, of the
    accumulator's type: the norm weight's gradient added to its FP32
    accumulator.

    With `residual` (of the input's type), `input_grad` is
    `residual + r · (w · dy) − …`, added in FP32 and rounded once: the
    residual stream's gradient and the norm's summed as the norm's gradient
    is written (`--infir2-fuse-accumulation` makes this form from an `add`).
    Each element of `input_grad` reads its own `residual` element before it
    is written, so the two may share a buffer.

    ```mlir
    %dx, %dw = infir2.rms_norm_grad %x, %w, %dy {epsilon = 1.0e-06 : f64} : tensor<2x32x64xf32>, tensor<64xf32>
    %dx2, %gw = infir2.rms_norm_grad %x, %w, %dy residual(%g : tensor<2x32x64xbf16>) acc(%acc : tensor<64xf32>) {epsilon = 1.0e-06 : f64} : tensor<2x32x64xbf16>, tensor<64xbf16>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$input, Infir2_FloatTensor:$weight,
                       Infir2_FloatTensor:$result_grad, PositiveF64Attr:$epsilon,
                       Optional<Infir2_FloatTensor>:$residual,
                       Optional<Infir2_FloatTensor>:$acc);
  let results = (outs Infir2_FloatTensor:$input_grad, Infir2_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $result_grad (`residual` `(` $residual^ `:` type($residual) `)`)?
    (`acc` `(` $acc^ `:` type($acc) `)`)?
    attr-dict `:` type($input) `,` type($weight)
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
    forward `attention`, `segments` included; the gradients have the types of
    `query`, `key` and `value`.

    ```mlir
    %dq, %dk, %dv = infir2.attention_grad %q, %k, %v, %do {causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
        : tensor<2x32x64xf32>, tensor<2x32x32xf32>, tensor<2x32x32xf32>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$query, Infir2_FloatTensor:$key,
                       Infir2_FloatTensor:$value, Infir2_FloatTensor:$result_grad,
                       Optional<Infir2_IdTensor>:$segments,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_kv_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim,
                       OptionalAttr<PositiveF64Attr>:$scale,
                       UnitAttr:$causal);
  let results = (outs Infir2_FloatTensor:$query_grad, Infir2_FloatTensor:$key_grad,
                      Infir2_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $result_grad (`segments` $segments^)?
    attr-dict `:` type($query) `,` type($key) `,` type($value)
    (`,` type($segments)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The softmax scale: the `scale` attribute, or 1/sqrt(head_dim).
    double getEffectiveScale();
  }];
}

def Infir2_CrossEntropyGradOp : Infir2_Op<"cross_entropy_grad",
    [Pure, AttrSizedOperandSegments, AllShapesMatch<["logits", "logits_grad"]>]> {
  let summary = "Computes the gradient of cross_entropy with respect to the logits.";
  let description = [{
    `logits_grad[t, i] = loss_grad · w_t / W · (softmax(logits[t])_i − [i == targets[t]])`
    with `w_t` and `W = Σ w_t` as in the forward op (0 for ignored tokens;
    all zero when no token counts), or `W = divisor` when it is given. The result has the shape of `logits`
    and, unless `-> type` says otherwise, its type; for `f32` logits it may
    be `bf16`: each element computed in FP32 and rounded once, what
    `infir2.convert` of the default result gives, without that tensor
    (`--infir2-fold-conversions`: the LM head's gradient). With
    `vocab_shards`, as in the forward op: rank `r`'s columns of the whole
    logits' gradient, from the group's combined log-sum-exp (a collective).

    ```mlir
    %dl = infir2.cross_entropy_grad %logits, %targets, %dloss mask %m
        : tensor<2x32x256xf32>, tensor<2x32xi32>, tensor<f32>, tensor<2x32xf32>
    %db = infir2.cross_entropy_grad %logits, %targets, %dloss
        : tensor<2x32x256xf32>, tensor<2x32xi32>, tensor<f32> -> tensor<2x32x256xbf16>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$logits, Infir2_IdTensor:$targets,
                       Optional<Infir2_MaskTensor>:$loss_mask,
                       Infir2_Scalar:$loss_grad,
                       Optional<Infir2_Scalar>:$divisor,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>, "1">:$vocab_shards);
  let results = (outs Infir2_FloatTensor:$logits_grad);
  let assemblyFormat = [{
    $logits `,` $targets `,` $loss_grad (`mask` $loss_mask^)?
    (`divisor` $divisor^)? attr-dict `:`
    type($logits) `,` type($targets) `,` type($loss_grad) (`,` type($loss_mask)^)?
    `` custom<ResultTypeIfOther>(ref(type($logits)), type($logits_grad))
  }];
  let hasVerifier = 1;
}

def Infir2_EmbeddingGradOp : Infir2_Op<"embedding_grad",
    [Pure, Infir2_AccumulatingOpInterface]> {
  let summary = "Scatter-adds the gradients of looked-up rows into a table-shaped gradient.";
  let description = [{
    `result[v, :] = Σ_{t : ids[t] == v} result_grad[t, :]`; the result has
    the table's shape `[V, D]` and the gradient's element type. With an
    accumulator `acc` (`f32`, of the result's type) it is
    `acc[v, :] + Σ …`, rounded once: the table's gradient added to its FP32
    accumulator, rows no token looked up left as they are. With
    `vocab_shards`, as in `infir2.embedding`: the result is rank `r`'s rows
    of the whole table's gradient, ids outside them skipped.

    ```mlir
    %dt = infir2.embedding_grad %ids, %dy : tensor<2x32xi32>, tensor<2x32x64xf32> -> tensor<256x64xf32>
    %gt = infir2.embedding_grad %ids, %dy acc(%acc : tensor<256x64xf32>) : tensor<2x32xi32>, tensor<2x32x64xbf16> -> tensor<256x64xf32>
    ```
  }];
  let arguments = (ins Infir2_IdTensor:$ids, Infir2_FloatTensor:$result_grad,
                       Optional<Infir2_FloatTensor>:$acc,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>, "1">:$vocab_shards);
  let results = (outs Infir2_FloatTensor:$table_grad);
  let assemblyFormat = [{
    $ids `,` $result_grad (`acc` `(` $acc^ `:` type($acc) `)`)? attr-dict `:`
    type($ids) `,` type($result_grad) `->` type($table_grad)
  }];
  let hasVerifier = 1;
}

#endif // INFIR2_DIALECT_INFIR2_IR_INFIR2GRADIENTOPS_TD
