// RUN: infir2-opt %s --split-input-file --infir2-autodiff --verify-diagnostics

// Tests that the forward function must exist.
// expected-error @below {{no function named 'forward' to differentiate}}
module {
  func.func @model() {
    return
  }
}

// -----

// Tests that the forward function returns one scalar loss.
// expected-error @+1 {{expects the forward function to return a single scalar loss (a 0-d float tensor), got 'tensor<4xf32>'}}
func.func @forward(%w: tensor<4xf32> {infir2.param = #infir2.param<"w", ones>}) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}

// -----

// Tests that there is something to train.
// expected-error @+1 {{has no trainable parameters (no argument carries 'infir2.param')}}
func.func @forward(%x: tensor<4xf32>) -> tensor<f32> {
  %l = infir2.reduce_sum %x : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that an existing training step is not overwritten.
// expected-error @below {{cannot create 'train_step': a symbol of that name already exists}}
module {
  func.func @forward(%w: tensor<4xf32> {infir2.param = #infir2.param<"w", ones>}) -> tensor<f32> {
    %l = infir2.reduce_sum %w : tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
  func.func private @train_step()
}

// -----

// Tests that an op without a gradient rule between a parameter and the loss
// is named.
func.func @forward(%w: tensor<1x128xf32> {infir2.param = #infir2.param<"w", ones>}) -> tensor<f32> {
  // expected-error @+1 {{'fp8.amax' op has no gradient rule, but lies between a parameter and the loss}}
  %a = fp8.amax (%w by #fp8.tensorwise) : tensor<1x128xf32> -> tensor<1x1xf32>
  %l = infir2.reduce_sum %a : tensor<1x1xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that a parameter that does not reach the loss is reported, and gets
// a zero gradient (its accumulator is returned unchanged).
// expected-warning @+1 {{parameter 'unused' does not reach the loss; its gradient is zero}}
func.func @forward(%w: tensor<4xf32> {infir2.param = #infir2.param<"w", ones>},
                   %u: tensor<4xf32> {infir2.param = #infir2.param<"unused", ones>}) -> tensor<f32> {
  %l = infir2.reduce_sum %w : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that a shared weight with a transposed batched lhs is reported
// rather than differentiated wrongly.
func.func @forward(%w: tensor<4x5xf32> {infir2.param = #infir2.param<"w", ones>},
                   %x: tensor<2x4x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{has no gradient rule for a batched 'lhs' with transpose_lhs and a shared rank-2 'rhs'}}
  %y = infir2.matmul %x, %w {transpose_lhs} : tensor<2x4x3xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
  %l = infir2.reduce_sum %y : tensor<2x3x5xf32> -> tensor<f32>
  return %l : tensor<f32>
}
