//===- StepPasses.td - Passes that plan the step as a whole -*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The passes the recipes end with, which use what the compiler knows about
// the whole training step: GEMMs that add into the gradient accumulators,
// one AdamW update for every tensor, the FP8 weight cache. Included by
// Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TRANSFORMS_STEPPASSES_TD
#define INFIR2_TRANSFORMS_STEPPASSES_TD

include "mlir/Pass/PassBase.td"

def FuseAccumulationPass
    : Pass<"infir2-fuse-accumulation", "mlir::ModuleOp"> {
  let summary = "Lets the ops that make gradients add them to their FP32 accumulators themselves.";
  let description = [{
    A gradient that the step adds to its FP32 accumulator,
    `infir2.add %acc, (infir2.convert (op ...))`, becomes the op with that
    accumulator, `op ... acc(%acc)`, writing FP32: the gradient is never
    rounded to BF16, no widening copy or add runs, and the memory planner
    lets the op write into the accumulator's own buffer. The op is one that
    implements `AccumulatingOpInterface` — a weight gradient's GEMM
    (`infir2.matmul`, `fp8.scaled_matmul`), a bias gradient's
    `infir2.reduce_sum`, a norm weight's `infir2.rms_norm_grad`, an
    embedding table's `infir2.embedding_grad` — and that result is read only
    by that conversion (or, when it is FP32 already, only by the add). The
    accumulator is an FP32 argument of the enclosing function (in a training
    step, a gradient accumulator), of the gradient's shape, or such an op's
    accumulated result that only this add reads.

    A gradient that is the sum of two such results (a tied embedding's:
    the LM head's weight gradient plus the embedding's),
    `add %acc, (convert (add %x, %y))`, is added into the accumulator one
    part after the other: `%x` with `%acc`, then `%y` with that. The fused
    op stays where the op was, so its operands are freed as early as
    before, unless its accumulator is made later (the second part of a
    sum), when it moves to just after it.

    A GEMM (an op with `GemmOpInterface` too) read only by an add of another
    tensor of its type, `add %x, (gemm ...)` (a residual, a sum of two
    gradients; f32 or bf16, no broadcast), becomes `gemm ... acc(%x)` when
    `%x` is made before the GEMM: the sum is rounded once, in the GEMM's
    call (cuBLASLt's C with beta = 1). In the same way a norm's input
    gradient read only by such an add, `add %x, (rms_norm_grad ...)#0` (the
    residual stream's gradient meeting the norm's), becomes
    `rms_norm_grad ... residual(%x)`. Anything else is left alone. Both
    recipes end with this pass.

    ```mlir
    %g = fp8.scaled_matmul (%dy, %dys by #fp8.groups<128, dim = 1>), (%x, %xs by #fp8.groups<128, dim = 1>) : ... -> tensor<768x256xbf16>
    %w = infir2.convert %g : tensor<768x256xbf16> -> tensor<768x256xf32>
    %a = infir2.add %acc, %w : tensor<768x256xf32>, tensor<768x256xf32>
    ```

    becomes

    ```mlir
    %a = fp8.scaled_matmul (%dy, %dys by #fp8.groups<128, dim = 1>), (%x, %xs by #fp8.groups<128, dim = 1>) acc(%acc : tensor<768x256xf32>) : ... -> tensor<768x256xf32>
    ```

    Numerics: the accumulator gains the FP32 (or FP64-summed, then
    rounded once) gradient instead of its BF16 rounding, so a gradient
    carries about 16 more bits, and the two parts of a tied embedding's
    gradient are no longer rounded to BF16 after their sum; a BF16 sum with
    a GEMM loses one rounding (2^-9 relative) of the product. A gradient
    summed over a tensor-parallel group (`infir2.tp_reduce`, a norm weight's
    under sequence parallelism) before its accumulator is made into FP32
    zeros and summed in FP32 instead (the accumulator itself would be
    summed once a rank).
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def FoldConversionsPass
    : Pass<"infir2-fold-conversions", "mlir::ModuleOp"> {
  let summary = "Lets an op write, in place of a conversion of its result, the converted tensor itself.";
  let description = [{
    `infir2.convert (infir2.cross_entropy_grad ...)` of `f32` logits to
    `bf16`, where the conversion is the gradient's only reader, becomes
    the gradient with the conversion's type: each element is computed in
    FP32 as before and rounded once, to the same bits, but the FP32 tensor
    never exists. (Narrower logits' gradient is rounded to their type
    first; a fold would drop that rounding, so it is left alone.) The LM head's FP32 logits thus get a BF16 gradient directly:
    at Qwen2.5-0.5B, 8 × 2048 tokens, the 9.3 GiB FP32 gradient and the
    copy to its 4.6 GiB BF16 form go. Anything else is left alone. Both
    recipes run this pass after `--infir2-fuse-accumulation`.

    ```mlir
    %g = infir2.cross_entropy_grad %logits, %t, %dl : tensor<4x128x256xf32>, tensor<4x128xi32>, tensor<f32>
    %b = infir2.convert %g : tensor<4x128x256xf32> -> tensor<4x128x256xbf16>
    ```

    becomes

    ```mlir
    %b = infir2.cross_entropy_grad %logits, %t, %dl : tensor<4x128x256xf32>, tensor<4x128xi32>, tensor<f32> -> tensor<4x128x256xbf16>
    ```
  }];
}

def GroupCallsPass : Pass<"infir2-group-calls", "mlir::ModuleOp"> {
  let summary = "Moves ops the runtime runs as one call next to each other.";
  let description = [{
    The lowering to runtime calls merges consecutive calls that the runtime
    runs as one (`fp8.quantize_dual`s of one format, scale rule,
    granularity and rank; `infir2.reduce_sum`s, all with an accumulator or
    all without). Autodiff emits a layer's q, k and v gradients (and its
    gate and up gradients) one after the other, each quantization or bias
    sum followed by its GEMMs, so none are consecutive. This pass moves each
    such op of a function's body up to just after the nearest earlier op of
    its kind when everything it reads is made before that op: the ops are
    pure, so the values are the same, and the lowering then makes one call
    of them. At Qwen2.5-0.5B (fp8) a layer's backward pass makes 3
    quantizations and 1 bias sum instead of 6 and 3.

    The moved op's results live from the earlier point on: the memory plan
    counts them (a layer's q, k and v gradients in FP8, a few MB at 8 × 2048
    tokens). An op whose operands are not all made yet stays where it is
    and starts the next group; ops in nested regions (`fp8.fused`) are left
    alone.
  }];
}

def CacheFP8WeightsPass
    : Pass<"infir2-cache-fp8-weights", "mlir::ModuleOp"> {
  let summary = "Quantizes the FP8 GEMMs' weights once per optimizer step, not per micro-batch.";
  let description = [{
    In `@train_step`, every `fp8.quantize` of a parameter (an argument with
    `infir2.param`) by `#fp8.blocks`, or of its transpose
    (`infir2.transpose %w [1, 0]`, the dgrad GEMM's operand), becomes two
    arguments of the step: the cached codes and scales, each a state slot
    named by `infir2.fp8_cache` (`NAME:data`, `NAME:scale`, and `NAME.t:...`
    for the transposed copy). The weights only change in the optimizer step,
    so the step reads the same codes and scales it used to compute.

    The cache is filled by a new function, `@quantize_weights` (parameters
    in, cache out; the trainer calls it once after loading the weights), and
    refreshed at the end of `@optimizer_step` from each parameter's updated
    working copy (the result with `infir2.working_copy_of`), so a step with
    `K` accumulated micro-batches quantizes each weight once instead of
    `2K` times. `@forward` (evaluation) reads the same slots for the
    quantizations it shares with the step.

    With square blocks both copies come from one `fp8.quantize_dual` of the
    weight: block `(i, j)` of `Wᵀ` holds the elements of block `(j, i)` of
    `W`, so its amax, scale and codes are the same, bit for bit what
    quantizing the transpose gives, and one pass writes both. Non-square
    blocks, or one layout alone, quantize (the transpose) on their own,
    still once per optimizer step.

    A parameter the optimizer step does not update (no working copy among
    its results) is left to quantize in the step as before. Running the
    pass again changes nothing.

    ```mlir
    %wt = infir2.transpose %w [1, 0] : tensor<768x256xbf16> -> tensor<256x768xbf16>
    %q, %s = fp8.quantize %wt to e4m3 by #fp8.blocks<128, 128> scale pow2 : ...
    ```

    becomes an argument pair of `@train_step`

    ```mlir
    %q: tensor<256x768xf8E4M3FN> {infir2.fp8_cache = "model.layers.0.mlp.gate_proj.weight.t:data"},
    %s: tensor<2x6xf32> {infir2.fp8_cache = "model.layers.0.mlp.gate_proj.weight.t:scale"}
    ```
  }];
}

def ChunkLossPass : Pass<"infir2-chunk-loss", "mlir::ModuleOp"> {
  let summary = "Runs the LM head, the loss and their gradients a chunk of tokens at a time.";
  let description = [{
    The LM head's logits, `[tokens, vocab]` in FP32, are the largest tensor
    of a step (Qwen2.5 at 16k tokens: 9.3 GiB, and their BF16 gradient 4.6
    more). This pass computes them a chunk of tokens at a time: for each
    chunk, the head's GEMM on its rows of the final norm's output, its share
    of the loss (`cross_entropy ... divisor` the whole batch's
    `infir2.loss_weight`), the logits' gradient, the chunk's rows of the
    norm output's gradient (written where they lie in the whole gradient:
    `infir2.concat`, placed by the planner) and the head's weight gradient
    added to its accumulator. A chunk's logits and their gradient are freed
    before the next chunk's are made, so no whole-logits buffer exists in
    the plan.

    It applies to `infir2.cross_entropy` of an `infir2.matmul`'s result
    read by nothing but the loss and (in a training step) its
    `cross_entropy_grad`, whose result feeds the head's input-gradient GEMM
    and, through a reshape to `[tokens, vocab]`, its weight-gradient GEMM
    (FP32, or with an accumulator): what the recipes make of the LM head.
    The chunk is `tokens` rows (the last chunk holds what is left). With
    `tokens=0` it is the largest divisor of the token count whose logits fit
    in `chunk-bytes`, when that divisor is at least half the rows that fit
    (equal chunks), else the rows that fit rounded down to a multiple of 64
    (a shorter last chunk, never a swarm of tiny ones). A loss whose logits
    fit already is left alone, and so is any other form (with `tokens` set,
    a warning says so). The first chunk's `infir2.loss_weight` carries
    `infir2.chunked`, the decision and its reason.

    Numerics: the same loss and gradients but for FP32 summation order: the
    chunks' losses are added in FP32, and the weight gradient gains each
    chunk's product in turn (one rounding per chunk instead of one).
  }];
  let options = [
    Option<"tokens", "tokens", "int64_t", "0",
           "Tokens per chunk (the last holds what is left); 0: as many "
           "as fit in chunk-bytes">,
    Option<"chunkBytes", "chunk-bytes", "int64_t", "268435456",
           "With tokens=0: the most bytes one chunk's logits may take">,
  ];
}

def RecomputePass : Pass<"infir2-recompute", "mlir::ModuleOp"> {
  let summary = "Recomputes activations in the backward pass until the planned step fits a memory budget.";
  let description = [{
    With a `budget` (a size: `80GiB`, `512MiB`, `4e9` bytes), the step is
    planned as `--infir2-plan-memory` would plan it (the persistent state
    plus the largest arena: what the trainer allocates). While that exceeds
    the budget, a forward op of `@train_step` whose result the backward
    pass reads is recomputed there: the op is cloned just before its first
    backward reader, and every backward reader reads the clone, so the
    original result is freed after its last forward reader and the clone's
    operands are kept instead. Candidates are GEMMs without an accumulator
    (`infir2.matmul`, `fp8.scaled_matmul`: a SwiGLU's gate and up, recomputed
    from the FP8 copy of their input the forward GEMM read), norms,
    SwiGLU, SiLU and rotary embeddings. Each round takes the candidate that
    frees the most bytes (its results kept across the loss, less operands
    not kept otherwise) per predicted second (the step-time model of
    `cost-target`), plans again, and undoes it if the plan did not shrink.
    Without a budget nothing is recomputed: the fastest plan.

    Each clone carries `infir2.recompute`, a sentence with the budget, what
    it frees and its predicted cost. A remark sums up the plan. When every
    candidate is recomputed and the step still does not fit, the pass fails
    with the plan it reached and what would fit: the state alone, ZeRO-1's
    saving, or the tokens a micro-batch could hold. Numerics: unchanged,
    bit for bit (each clone computes what the original did, from the same
    operands).
  }];
  let options = [
    Option<"budget", "budget", "std::string", "\"\"",
           "The most bytes the planned step may take (e.g. 80GiB); empty: "
           "no recomputation">,
    Option<"costTarget", "cost-target", "std::string", "\"h100\"",
           "The step-time model that prices a recomputation: h100 or h200">,
  ];
}

def FuseOptimizerPass : Pass<"infir2-fuse-optimizer", "mlir::ModuleOp"> {
  let summary = "Makes the AdamW updates of a step one op over all the optimizer's state.";
  let description = [{
    In every function, the `infir2.adamw` updates that share their learning
    rate, step, gradient scale and norm and their betas, epsilon and
    clipping (in an optimizer step: all of them) become one
    `infir2.adamw_group`, with each tensor's weight decay in
    `weight_decays`; the `infir2.convert` of an updated master to its
    narrower working copy joins the group as one of its `working_copies`.
    A backend then runs the step's whole update as one call, one pass over
    every tensor (reading each master once for the update and the working
    copy), instead of a call per tensor and a conversion per working copy.
    The arithmetic of each element is unchanged, so are the bits.

    The group takes the place of the first update. If an operand of any
    update is not defined before it, no update is fused (the step is left as
    it is), and a single update is not a group either. Both recipes end with
    this pass.

    ```mlir
    %p0, %m0, %v0 = infir2.adamw %a, %ga, %ma, %va, %lr, %t, %s, %n {..., weight_decay = 0.1 : f64} : tensor<8x4xf32>
    %w0 = infir2.convert %p0 : tensor<8x4xf32> -> tensor<8x4xbf16>
    %p1, %m1, %v1 = infir2.adamw %b, %gb, %mb, %vb, %lr, %t, %s, %n {..., weight_decay = 0.0 : f64} : tensor<4xf32>
    ```

    becomes

    ```mlir
    %p:2, %m:2, %v:2, %w0 = infir2.adamw_group (%a, %b) grads(%ga, %gb) moments(%ma, %mb) (%va, %vb)
        lr %lr step %t scale %s norm %n {..., weight_decays = array<f64: 0.1, 0.0>, working = array<i64: 0>}
        : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xbf16>
    ```
  }];
}

#endif // INFIR2_TRANSFORMS_STEPPASSES_TD
