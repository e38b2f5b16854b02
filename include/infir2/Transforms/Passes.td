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
    rule is an error naming the op.
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The forward function to differentiate">,
    Option<"trainStepName", "train-step", "std::string", "\"train_step\"",
           "The name of the training-step function to create">
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
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"",
           "adamw or sgd">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW's first-moment decay">,
    Option<"beta2", "beta2", "double", "0.95", "AdamW's second-moment decay">,
    Option<"epsilon", "epsilon", "double", "1e-8", "AdamW's epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.1",
           "Decoupled weight decay">,
    Option<"maxGradNorm", "max-grad-norm", "double", "1.0",
           "Global-norm gradient clipping threshold (0 disables)">,
    Option<"decay1D", "decay-1d", "bool", "false",
           "Also apply weight decay to 1-D parameters (biases, norms)">
  ];
  let dependentDialects = ["infir2::Infir2Dialect", "mlir::func::FuncDialect"];
}

#endif // INFIR2_TRANSFORMS_PASSES_TD
