// RUN: infir2-opt %s --infir2-autodiff="forward=loss_fn train-step=step" | FileCheck %s

// Tests the pass options: another forward function and step name.
// CHECK: func.func @loss_fn(
// CHECK: func.func @step(
// CHECK-SAME: {infir2.grad_of = "w"}
func.func @loss_fn(%w: tensor<4xf32> {infir2.param = #infir2.param<"w", ones>}) -> tensor<f32> {
  %l = infir2.reduce_sum %w : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
