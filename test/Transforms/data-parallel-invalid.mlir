// RUN: infir2-opt %s --split-input-file --infir2-data-parallel --verify-diagnostics

// Tests that a module without an optimizer step is refused.
// expected-error @+1 {{no @optimizer_step to make data-parallel (run --infir2-optimizer first)}}
module {
  func.func @train_step() {
    return
  }
}

// -----

// Tests that an optimizer step without gradient accumulators is refused.
// expected-error @+1 {{has no gradient accumulators (arguments carrying 'infir2.grad_of')}}
func.func @optimizer_step(%p: tensor<4xf32>) -> tensor<4xf32> {
  return %p : tensor<4xf32>
}

