// One linear layer with loss = sum((x·Wᵀ) ⊙ r): dW = rᵀ·x is one wgrad GEMM,
// dx = r·W one dgrad GEMM (see fp8-recipe-gradients.test).
func.func @forward(%w: tensor<256x256xf32> {infir2.param = #infir2.param<"w", normal(std = 1.0)>},
                   %x: tensor<256x256xf32> {infir2.param = #infir2.param<"x", normal(std = 1.0)>},
                   %r: tensor<256x256xf32>) -> tensor<f32> {
  %y = infir2.matmul %x, %w {transpose_rhs} : tensor<256x256xf32>, tensor<256x256xf32> -> tensor<256x256xf32>
  %m = infir2.mul %y, %r : tensor<256x256xf32>, tensor<256x256xf32>
  %l = infir2.reduce_sum %m : tensor<256x256xf32> -> tensor<f32>
  return %l : tensor<f32>
}
