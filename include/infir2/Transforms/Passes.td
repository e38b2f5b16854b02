//===- Passes.td - InfiR2's passes ------------------------*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TRANSFORMS_PASSES_TD
#define INFIR2_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def ParamSummaryPass : Pass<"infir2-param-summary", "mlir::ModuleOp"> {
  let summary = "Prints every trainable parameter of each function and their totals.";
  let description = [{
    For each function with `infir2.param` arguments, prints one row per
    parameter (checkpoint name, shape, element type, initialization rule) and
    the number of parameter tensors and elements. The IR is not changed. Use it
    to check a model against its published parameter count:

    ```
    $ infir2-opt model.mlir --infir2-param-summary -o /dev/null
    @forward: 26 parameter tensors, 1,640,704 parameters
      model.embed_tokens.weight                       256x256  bf16  normal(std = 0.02)
      ...
    ```
  }];
  let options = [
    Option<"toStdout", "to-stdout", "bool", /*default=*/"false",
           "Print to standard output instead of standard error">
  ];
}

def AutodiffPass : Pass<"infir2-autodiff", "mlir::ModuleOp"> {
  let summary = "Derives a training step (loss and parameter gradients) from a forward function.";
  let description = [{
    Reverse-mode automatic differentiation. Given `@forward(params..., batch...)
    -> loss`, where parameters are the arguments carrying `infir2.param` and the
    loss is a 0-d float tensor, it adds

    ```mlir
    func.func @train_step(params..., batch..., acc...) -> (tensor<f32>, acc'...)
    ```

    with one FP32 gradient accumulator per parameter (`infir2.grad_of =
    "<parameter name>"`): `acc' = acc + dL/dparam`. A trainer zeroes the
    accumulators, calls the step once per micro-batch, and hands the sums to
    the optimizer: gradient accumulation over micro-batches in FP32 buffers.

    The backward pass is built from each op's `GradientOpInterface` rule, in
    reverse order, only through ops that depend on a parameter; gradients of
    values used more than once are summed. Activation gradients keep their
    values' types (BF16 activations have BF16 gradients, as on the GPU);
    parameter gradients are converted to FP32 when accumulated.

    A parameter that does not reach the loss gets a warning and a zero
    gradient. An op between the parameters and the loss without a gradient
    rule is an error naming the op. In a tensor-parallel forward, each
    `infir2.tp_copy` gives its gradient's `infir2.tp_reduce` and is then
    dropped from the step, where it is an identity.
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The forward function to differentiate">,
    Option<"trainStepName", "train-step", "std::string", "\"train_step\"",
           "The name of the training-step function to create">,
    Option<"skipIfPresent", "skip-if-present", "bool", "false",
           "Do nothing when the training step already exists (pipelines "
           "accept forward-only and differentiated modules alike)">
  ];
  let dependentDialects = ["infir2::Infir2Dialect", "mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect"];
}

def OptimizerPass : Pass<"infir2-optimizer", "mlir::ModuleOp"> {
  let summary = "Creates the optimizer step: AdamW (or SGD) on FP32 master weights and moments.";
  let description = [{
    For the parameters of the forward function, adds

    ```mlir
    func.func @optimizer_step(masters..., grads..., [moment1..., moment2...,]
                              %lr, [%step,] %grad_scale)
        -> (masters'..., [moment1'..., moment2'...,] working_copies..., %grad_norm)
    ```

    Master weights, moments and the accumulated gradients (from
    `--infir2-autodiff`'s `train_step`) are FP32; the working copies are the
    masters rounded to each parameter's own type (BF16 for a BF16 model), which
    the next forward reads. `grad_scale` averages gradients accumulated over
    micro-batches (1/K), the learning rate and the 1-based step are runtime
    inputs (schedules need no recompilation), and the global gradient norm is
    returned for logging. Every tensor names its parameter through
    `infir2.master_of`, `infir2.grad_of`, `infir2.moment1_of`,
    `infir2.moment2_of` or `infir2.working_copy_of`.

    Weight decay skips 1-D parameters (biases, norm weights) unless
    `decay-1d` is set, as Megatron-LM does.
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The forward function whose parameters are optimized">,
    Option<"stepName", "step-name", "std::string", "\"optimizer_step\"",
           "The name of the optimizer-step function to create">,
    Option<"optimizer", "optimizer", "infir2::OptimizerKind",
           "infir2::OptimizerKind::adamw", "The update rule",
           "infir2::optimizerValues()">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW's first-moment decay">,
    Option<"beta2", "beta2", "double", "0.95", "AdamW's second-moment decay">,
    Option<"eps", "eps", "double", "1e-8", "AdamW's epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.1",
           "Decoupled weight decay">,
    Option<"gradClip", "grad-clip", "double", "1.0",
           "Global-norm gradient clipping threshold (0 disables)">,
    Option<"decay1D", "decay-1d", "bool", "false",
           "Also apply weight decay to 1-D parameters (biases, norms)">,
    Option<"optimizerState", "optimizer-state", "infir2::OptimizerState",
           "infir2::OptimizerState::fp32",
           "The element type of AdamW's moments",
           "infir2::optimizerStateValues()">,
    Option<"skipIfPresent", "skip-if-present", "bool", "false",
           "Do nothing when the optimizer step already exists">
  ];
  let dependentDialects = ["infir2::Infir2Dialect", "mlir::func::FuncDialect"];
}

def DeriveDecodePass : Pass<"infir2-derive-decode", "mlir::ModuleOp"> {
  let summary = "Derives a decode step with a key/value cache from a causal language model's forward function.";
  let description = [{
    Given `@forward(params..., batch...) -> loss` whose loss is the
    `infir2.cross_entropy` of logits `[B, S, V]`, adds

    ```mlir
    func.func @decode_step(params...,
        %ids: tensor<1x1xi32> {infir2.decode = "input_ids"},
        %pos: tensor<1x1xi32> {infir2.decode = "positions"},
        %k0: tensor<1xLxW> {infir2.cache = "layers.0.key"}, %v0: ..., ...)
        -> (tensor<1x1xV> {infir2.decode = "logits"}, caches'...)
    ```

    the forward pass of one new token at position `pos`: every op that the
    logits depend on, on `[1, 1, ...]` instead of `[B, S, ...]`, except that
    each causal `infir2.attention` becomes an `infir2.cache_write` of its keys
    and values into that layer's cache (the token's row) and an
    `infir2.cache_attention` of its query over the cache up to `pos`. The
    memory planner updates the caches in place, so a step reads each cache
    once and writes one row. `L` is `max-length` (default: the forward's
    sequence length `S`), the longest prompt plus generated text.

    The loss, targets, loss mask and segments are dropped; the parameters are
    the forward's, so the step reads the weights training updates. Its GEMMs
    stay in the model's precision (`--infir2-assign-precision` keeps them).

    A forward the step cannot be derived from is an error naming the reason
    (non-causal attention, logits that depend on the targets, a tensor not
    shaped `[B, S, ...]` along the way), or, with `if-supported`, leaves the
    module unchanged; the trainer then says it cannot generate.
  }];
  let options = [
    Option<"maxLength", "max-length", "int64_t", "0",
           "The key/value cache's length: the longest prompt plus generated "
           "text (0: the forward's sequence length)">,
    Option<"ifSupported", "if-supported", "bool", "false",
           "Leave the module unchanged, without an error, when the forward "
           "is not a causal language model the step can be derived from">,
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The forward function to derive the step from">
  ];
}

def AssignPrecisionPass : Pass<"infir2-assign-precision", "mlir::ModuleOp"> {
  let summary = "Decides, per GEMM, FP8 or high precision, and records the decision and its reason.";
  let description = [{
    Looks at every op implementing `GemmOpInterface` (`infir2.matmul`,
    `linalg.matmul`, `linalg.batch_matmul`) in every function and attaches an
    `fp8.decision`. Fixed rules first:

    - a GEMM form the interface cannot describe stays as it is;
    - the LM head (the GEMM whose output is the loss's logits, and the
      gradient GEMMs of its weight) stays in high precision;
    - every GEMM of `@decode_step` (`--infir2-derive-decode`) stays in high
      precision: generation runs in the model's own precision.

    Everything outside GEMMs (embedding, the attention core, norms, softmax,
    loss, residual adds, the optimizer) is never a candidate.

    Then the policy options, in order: `keep-high` keeps the GEMMs it lists
    (by weight, and optionally role) in high precision, with the reason
    "kept high by bisection" (infir2-bisect's answer); `keep-first-last`
    keeps the GEMMs of
    the first and last N decoder layers (`model.layers.<i>.` weights) in high
    precision; a GEMM whose token, output or contraction size is not a
    multiple of the recipe's block (128 for `blockwise`, 32 for `mxfp8`, 16
    otherwise, as FP8 tensor cores need) stays in high precision; so does a GEMM of fewer than
    `min-gemm-flops` floating-point operations (too small to gain). With
    `cost-model=h100` (or `h200`), the step-time model
    (`--infir2-report-step-time`, GEMM rates by shape as measured on the lent
    GPUs) chooses among the GEMMs left in FP8: those that quantize a common
    activation or gradient (through reshapes and transposes; weights are
    quantized once per optimizer step, so `mxfp8`, which has no weight cache
    and no Hopper target, is refused with it) form a group, and the group takes the
    choice of FP8 GEMMs with the least predicted time, its BF16 GEMMs plus
    its FP8 GEMMs plus one quantization per operand an FP8 GEMM reads (every
    choice for groups of up to 12 GEMMs, a layer's q, k and v make 9; all or
    none beyond). A GEMM kept in high precision gives its group's times.

    An FP8 GEMM's decision names each operand's granularity as the operand is
    stored: `blockwise` (the InfiR2 recipe) puts the weight in 128×128 blocks
    and activations and gradients in 1×128 groups along the contraction
    dimension — along tokens in the weight-gradient GEMM; `tensorwise` gives
    one scale per tensor; `rowwise` one per row of K; `mxfp8` every operand,
    weights included, in OCP MX blocks of 32 along its contraction dimension
    with E8M0 scales (`#fp8.mx`, for Blackwell; docs/MXFP8.md), which takes
    the `pow2` or `floor` scale rule. `scales=floor` is the OCP MX
    specification's power of two, 2^(floor(log2 amax) - emax), which may
    saturate a block's largest values; `pow2` rounds amax / max up to a
    power of two and saturates nothing. `format=hybrid` puts the incoming
    gradient operand of dgrad and wgrad GEMMs in E5M2; `e5m2` puts both
    operands of the GEMMs it lists in E5M2 (keep-high wins over it), and the
    decision's reason says so. cuBLASLt has no E5M2 x E5M2 GEMM: such a
    trainer's manifest says so (`e5m2_pair`), and it trains on the CPU.
  }];
  let options = [
    Option<"granularity", "granularity", "infir2::Granularity",
           "infir2::Granularity::blockwise",
           "How FP8 GEMM operands are scaled", "infir2::granularityValues()">,
    Option<"format", "format", "infir2::FormatPolicy",
           "infir2::FormatPolicy::e4m3", "Which FP8 formats the operands take",
           "infir2::formatValues()">,
    Option<"scales", "scales", "infir2::ScalePolicy", "infir2::ScalePolicy::pow2",
           "How scales are rounded", "infir2::scaleValues()">,
    Option<"keepFirstLast", "keep-first-last", "unsigned", "0",
           "Keep the GEMMs of the first and last N decoder layers in high "
           "precision">,
    Option<"minGemmFlops", "min-gemm-flops", "double", "1.6e7",
           "GEMMs of fewer floating-point operations stay in high precision "
           "(too small to gain from FP8)">,
    Option<"costModel", "cost-model", "std::string", /*default=*/"\"\"",
           "Keep a GEMM in high precision where the step-time model on this "
           "target (h100, h200) predicts FP8 would not pay (default: no "
           "model)">,
    ListOption<"keepHigh", "keep-high", "std::string",
               "GEMMs to keep in high precision, each `WEIGHT` (all its "
               "GEMMs) or `WEIGHT:ROLE` (fprop, dgrad or wgrad), as "
               "infir2-bisect prints them; an entry no GEMM has is an error">,
    ListOption<"e5m2", "e5m2", "std::string",
               "GEMMs whose two operands take E5M2 where they run in FP8, "
               "named as keep-high names them (a per-GEMM format, e.g. to "
               "study one layer's sensitivity); an entry no GEMM has is an "
               "error">
  ];
  let dependentDialects = ["infir2::fp8::FP8Dialect"];
}

def FP8ReportPass : Pass<"infir2-fp8-report", "mlir::ModuleOp"> {
  let summary = "Prints one row per GEMM with its precision decision, and the totals.";
  let description = [{
    Reads the `fp8.decision` of every GEMM (run `--infir2-assign-precision`
    first) and prints, per function: the GEMM's weight (or location), its role
    (fprop, dgrad, wgrad), its size M×N×K (batch folded into M), the
    precision, each operand's FP8 format and granularity, and the reason;
    then, per role, how many GEMMs run in FP8 and the share of GEMM flops
    they carry. The IR is not changed.
  }];
  let options = [
    Option<"toStdout", "to-stdout", "bool", /*default=*/"false",
           "Print to standard output instead of standard error">
  ];
}

def ReportStepTimePass : Pass<"infir2-report-step-time", "mlir::ModuleOp"> {
  let summary = "Prints the predicted time of the training step on a target, by kind of op.";
  let description = [{
    A roofline model of `@train_step` (one micro-batch) and `@optimizer_step`
    after a recipe: each op takes its FLOPs over the target's rate for its
    kind, or its bytes over the target's memory bandwidth, whichever is
    longer, plus a fixed cost per call. GEMM rates come from a small table of
    shapes measured on the lent H200 (`h100` and `h200` share it; their peaks
    and bandwidths differ); attention runs at a share of the BF16 peak that a
    fused kernel reaches. The `cpu` target reads this machine's BF16 and FP32
    GEMM rates and its bandwidth from the JSON file `infir2-gemm-peak --json`
    writes (`calibration`). Prints one row per kind (calls, GFLOP, GB moved,
    ms, share), the totals and the tokens/s of one micro-batch plus the
    optimizer step. The IR is not changed.

    ```
    $ infir2-compile model.mlir --recipe=fp8 --report-step-time=h100
    ```
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"h100\"",
           "h100, h200 or cpu">,
    Option<"calibration", "calibration", "std::string", /*default=*/"\"\"",
           "For cpu: the JSON file infir2-gemm-peak --json writes">,
    Option<"toStdout", "to-stdout", "bool", /*default=*/"false",
           "Print to standard output instead of standard error">
  ];
}

def VerifyPrecisionPass : Pass<"infir2-verify-precision", "mlir::ModuleOp"> {
  let summary = "Checks statically that the precision decisions keep the numerics contract.";
  let description = [{
    A check to run between the recipe's stages. It fails, with a diagnostic
    naming the op, when:

    - a GEMM the contract keeps in high precision (the LM head, and the
      gradient GEMMs of its weight) is decided FP8;
    - an FP8 decision's granularities do not tile its operands;
    - `scales=pow2` (or `fp32`, or `floor`) is asked for and a decision or
      an `fp8.quantize` uses another scale rule;
    - an optimizer update (`infir2.adamw`, `infir2.sgd`) does not act on an
      FP32 master weight (an argument carrying `infir2.master_of`).
  }];
  let options = [
    Option<"scales", "scales", "infir2::RequiredScales",
           "infir2::RequiredScales::any", "Require this scale rule everywhere",
           "infir2::requiredScaleValues()">
  ];
}

def InsertQuantizationPass
    : Pass<"infir2-insert-quantization", "mlir::ModuleOp"> {
  let summary = "Rewrites every GEMM decided FP8 into quantize ops and an fp8.scaled_matmul.";
  let description = [{
    For each GEMM whose `fp8.decision` says fp8 (`--infir2-assign-precision`),
    quantizes both operands with the decided format, granularity and scale
    rule and multiplies them with `fp8.scaled_matmul`, which accumulates in
    FP32 and writes the GEMM's original result type.

    `fp8.scaled_matmul` takes both operands with the contraction dimension
    last ("TN"), the only layout Hopper's FP8 tensor cores accept. An operand
    stored K-first (the weight in the dgrad GEMM, both operands of the wgrad
    GEMM) is physically transposed first, and its granularity is transposed
    with it, so that a weight-gradient GEMM's operands are quantized in 1×128
    groups along tokens. A linalg GEMM's init is added back unless it is a
    zero fill. The decision moves to the new `fp8.scaled_matmul`.

    A tensor read in both layouts — by a forward or data-gradient GEMM
    (`[T, K]`) and, transposed, by a weight-gradient GEMM (`[K, T]`, through a
    reshape that collapses its leading dimensions if it has more than two) —
    gets one `fp8.quantize_dual` that writes both FP8 copies, in place of all
    of its quantizations and transposes. Other identical quantizations of one
    value are left to `--cse`.
  }];
  let options = [
    Option<"dualLayouts", "dual-layouts", "bool", /*default=*/"true",
           "Quantize a tensor read in both layouts once, into both copies "
           "(off: one quantize per layout, after an explicit transpose)">
  ];
  let dependentDialects = ["infir2::Infir2Dialect", "infir2::fp8::FP8Dialect"];
}

def FuseCastsPass : Pass<"infir2-fuse-casts", "mlir::ModuleOp"> {
  let summary = "Fuses FP8 casts into the ops around them: dequantize into GEMMs, quantize into its producer.";
  let description = [{
    Runs after `--infir2-insert-quantization`; the numerics do not change,
    only which ops a backend runs as one kernel.

    - **Dequantization into the GEMM.** A GEMM (any `GemmOpInterface` op in a
      form the recipe handles) whose operands are both `fp8.dequantize`
      results, stored with the contraction dimension last, becomes an
      `fp8.scaled_matmul` of the FP8 data with the scales riding along, as
      cuBLASLt's block-scaled modes take them. The FP8 recipe's own GEMMs are
      built that way already.
    - **Quantization into a norm or SwiGLU.** An `infir2.rms_norm` or
      `infir2.swiglu` whose result is quantized (`fp8.quantize`,
      `fp8.quantize_dual`) becomes one `fp8.fused` op with those
      quantizations: one kernel writes FP8 data and scales. The
      high-precision result is still yielded if anything else reads it.
    - **FP8 output of a GEMM.** An `fp8.scaled_matmul` whose result is read
      only by quantizations (so only by other FP8 GEMMs) becomes an
      `fp8.fused` op that yields only the FP8 copies: the high-precision
      product is never a tensor the step keeps. A GEMM whose result anything
      else reads is left alone. (cuBLASLt's block-scaled modes have no FP8
      output, so a cuBLASLt backend runs this group as the GEMM into a
      workspace and one quantize kernel.)

    Example: `%n = infir2.rms_norm ...` read only by `fp8.quantize_dual %n`
    becomes

    ```mlir
    %q, %s, %qt, %st = fp8.fused -> (...) {
      %n = infir2.rms_norm %x, %w ...
      %0:4 = fp8.quantize_dual %n ...
      fp8.yield %0#0, %0#1, %0#2, %0#3 : ...
    }
    ```
  }];
  let dependentDialects = ["infir2::Infir2Dialect", "infir2::fp8::FP8Dialect"];
}

def PlanMemoryPass : Pass<"infir2-plan-memory", "mlir::ModuleOp"> {
  let summary = "Places every tensor of the training step: a state region and one liveness-planned arena per step.";
  let description = [{
    Runs after a recipe pipeline, on a module holding `@train_step`,
    `@optimizer_step` and optionally `@forward`. Every argument and result
    gets a slot of the persistent state region (parameters' working copies,
    FP32 master weights, moments, gradient accumulators, the batch inputs,
    the loss and the gradient norm); every tensor a step computes gets an
    offset in that step's scratch arena, first fit in execution order, freed
    after its last reader (`fp8.fused` bodies run in line; a reshape is a view
    of its input). A returned value is made directly in its state slot, with
    no arena bytes and no copy at the end, when no argument in that slot is
    read after the op that makes it, nor by that op unless it reads each
    element before writing it (`adamw`, `sgd`, and `add` / `mul` on an
    operand of the result's shape): the optimizer updates masters and
    moments in place, gradient accumulators add in place, the loss and the
    working copies are written where they live. Nothing moves yet: the
    decisions are written into the IR.

    - the module gets `infir2rt.plan = #infir2rt.plan<...>`: the state
      region's slots and size, the largest arena, the batch geometry and the
      ZeRO-1 world size;
    - each planned function gets `infir2rt.symbol` (the C symbol the trainer
      calls: `infir2_train_step`, `infir2_optimizer_step`, `infir2_eval_step`)
      and `infir2rt.scratch_bytes`;
    - each argument gets `infir2rt.buffer`, each op `infir2rt.buffers` (one
      per result), and the return `infir2rt.copy_out` (the state slot of each
      returned value).

    ```mlir
    %0 = infir2.embedding %arg0, %arg9 {infir2rt.buffers =
        [#infir2rt.buffer<scratch, 0, tensor<4x128x256xbf16>>]} : ...
    ```

    With `report`, it also prints the planned memory by category (the state,
    plus the arena's live bytes at the training step's peak), each step's
    arena, and what the trainer allocates (the state and the largest arena)
    to standard output: what `infir2-compile --report-memory` shows.
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "Print the planned memory by category to standard output">
  ];
  let dependentDialects = ["infir2::rtir::RuntimeDialect"];
}

// The passes that plan the step as a whole: GEMMs that accumulate, one
// optimizer update, the FP8 weight cache.
include "infir2/Transforms/StepPasses.td"
include "infir2/Transforms/ParallelPasses.td"

#endif // INFIR2_TRANSFORMS_PASSES_TD
