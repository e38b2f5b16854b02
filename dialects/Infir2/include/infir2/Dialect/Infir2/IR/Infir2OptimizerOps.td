//===- Infir2OptimizerOps.td - Optimizer ops of infir2 -----*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The ops of the optimizer step: the global gradient norm, the collectives
// of data parallelism and ZeRO-1, and the AdamW and SGD updates.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_INFIR2_IR_INFIR2OPTIMIZEROPS_TD
#define INFIR2_DIALECT_INFIR2_IR_INFIR2OPTIMIZEROPS_TD

include "infir2/Dialect/Infir2/IR/Infir2OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

def Infir2_FP32Tensor : StaticShapeTensorOf<[F32]>;
// AdamW's moments: FP32, or BF16 (--infir2-optimizer="moment-type=bf16",
// the recipes' optimizer-state=bf16).
def Infir2_MomentTensor : StaticShapeTensorOf<[F32, BF16]>;

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

    With `tp_shards = k`, the first `k` gradients are this rank's shards of
    a tensor-parallel group's parameters (`--infir2-tensor-parallel`): their
    sums of squares are added over the group's ranks, the others' (whole on
    every rank) counted once.

    ```mlir
    %n = infir2.global_norm %g0, %g1 scale %s : tensor<8x4xf32>, tensor<4xf32>
    %m = infir2.global_norm %s0 scale %s {across_ranks} : tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Variadic<Infir2_FP32Tensor>:$grads, Infir2_Scalar:$scale,
                       UnitAttr:$across_ranks,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntNonNegative]>, "0">:$tp_shards);
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
  code momentDescription = [{

    The moments are FP32, or BF16 to halve their memory (as DeepSeek-V3
    keeps them): read widened to FP32, the update computed in FP32 exactly as
    with FP32 moments, and the new moments written rounded to nearest even
    (`: type moments bf16`). The master weight stays FP32.
  }];
}

def Infir2_AdamWOp : Infir2_UpdateOp<"adamw",
    [AllTypesMatch<["param", "grad", "new_param"]>,
     AllTypesMatch<["moment1", "moment2", "new_moment1", "new_moment2"]>]> {
  let summary = "Applies one AdamW step to an FP32 master weight and its moments.";
  let description = [{
    With `g` the scaled, clipped gradient and `t = step` (1-based):
    `m' = β1·m + (1 − β1)·g`, `v' = β2·v + (1 − β2)·g²`,
    `p' = p − lr·(weight_decay·p + (m'/(1 − β1ᵗ)) / (sqrt(v'/(1 − β2ᵗ)) + ε))`
    (decoupled weight decay, as `torch.optim.AdamW`).
  }] # clipDescription # momentDescription # [{

    ```mlir
    %p2, %m2, %v2 = infir2.adamw %p, %g, %m, %v, %lr, %step, %scale, %norm
        {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64,
         weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<8x4xf32>
    %p3, %m3, %v3 = infir2.adamw %p, %g, %mb, %vb, %lr, %step, %scale, %norm
        {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64,
         weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64}
        : tensor<8x4xf32> moments bf16
    ```
  }];
  let arguments = (ins Infir2_FP32Tensor:$param, Infir2_FP32Tensor:$grad,
                       Infir2_MomentTensor:$moment1, Infir2_MomentTensor:$moment2,
                       Infir2_Scalar:$learning_rate, Infir2_Scalar:$step,
                       Infir2_Scalar:$grad_scale, Infir2_Scalar:$grad_norm,
                       F64Attr:$beta1, F64Attr:$beta2, PositiveF64Attr:$epsilon,
                       F64Attr:$weight_decay, F64Attr:$max_grad_norm);
  let results = (outs Infir2_FP32Tensor:$new_param,
                      Infir2_MomentTensor:$new_moment1,
                      Infir2_MomentTensor:$new_moment2);
  let assemblyFormat = [{
    $param `,` $grad `,` $moment1 `,` $moment2 `,` $learning_rate `,` $step `,`
    $grad_scale `,` $grad_norm attr-dict `:` type($param)
    custom<MomentType>(ref(type($param)), type($moment1))
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

def Infir2_AdamWGroupOp : Infir2_UpdateOp<"adamw_group", [
    AttrSizedOperandSegments, AttrSizedResultSegments]> {
  let summary = "Applies one AdamW step to many FP32 master weights at once, and narrows them to their working copies.";
  let description = [{
    `infir2.adamw` on each `(params[i], grads[i], moments1[i], moments2[i])`
    with weight decay `weight_decays[i]`, all with the same learning rate,
    step, gradient scale and norm, betas, epsilon and clipping: element for
    element the same arithmetic, so the same bits. Each parameter listed in
    `working` (strictly increasing indices) also gets its updated master
    rounded (to nearest even) to `working_copies[k]`'s element type, as
    `infir2.convert` would.

    `--infir2-fuse-optimizer` makes it from the updates of an optimizer step,
    so that a backend runs the whole update as one call over all the
    optimizer's state (one pass, a segment table of tensors) instead of a
    call per tensor and a conversion per working copy.
  }] # clipDescription # momentDescription # [{

    ```mlir
    %p:2, %m:2, %v:2, %w = infir2.adamw_group (%p0, %p1) grads(%g0, %g1)
        moments(%m0, %m1) (%v0, %v1) lr %lr step %t scale %s norm %n
        {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64,
         max_grad_norm = 1.0 : f64, weight_decays = array<f64: 0.1, 0.0>,
         working = array<i64: 0>}
        : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xbf16>
    ```
  }];
  let arguments = (ins Variadic<Infir2_FP32Tensor>:$params,
                       Variadic<Infir2_FP32Tensor>:$grads,
                       Variadic<Infir2_MomentTensor>:$moments1,
                       Variadic<Infir2_MomentTensor>:$moments2,
                       Infir2_Scalar:$learning_rate, Infir2_Scalar:$step,
                       Infir2_Scalar:$grad_scale, Infir2_Scalar:$grad_norm,
                       F64Attr:$beta1, F64Attr:$beta2, PositiveF64Attr:$epsilon,
                       F64Attr:$max_grad_norm,
                       DenseF64ArrayAttr:$weight_decays,
                       DenseI64ArrayAttr:$working);
  let results = (outs Variadic<Infir2_FP32Tensor>:$new_params,
                      Variadic<Infir2_MomentTensor>:$new_moments1,
                      Variadic<Infir2_MomentTensor>:$new_moments2,
                      Variadic<Infir2_FloatTensor>:$working_copies);
  let assemblyFormat = [{
    ` ` `(` $params `)` `grads` `(` $grads `)` `moments` `(` $moments1 `)`
    `(` $moments2 `)` `lr` $learning_rate `step` $step `scale` $grad_scale
    `norm` $grad_norm attr-dict `:` type($params)
    custom<SameTypes>(ref(type($params)), type($grads), type($moments1),
                      type($moments2), type($new_params), type($new_moments1),
                      type($new_moments2))
    (`->` type($working_copies)^)?
  }];
  let hasVerifier = 1;
}

#endif // INFIR2_DIALECT_INFIR2_IR_INFIR2OPTIMIZEROPS_TD
