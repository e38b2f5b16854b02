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

#endif // INFIR2_TRANSFORMS_PASSES_TD
