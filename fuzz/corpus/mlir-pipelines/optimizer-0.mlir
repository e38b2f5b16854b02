func.func @forward(%w: tensor<8x4xbf16> {infir2.param = #infir2.param<"w", normal(std = 0.02)>},
                   %n: tensor<4xf32> {infir2.param = #infir2.param<"norm", ones>},
                   %x: tensor<2x4xbf16>) -> tensor<f32> {
  %y = infir2.matmul %x, %w {transpose_rhs} : tensor<2x4xbf16>, tensor<8x4xbf16> -> tensor<2x8xf32>
  %l = infir2.reduce_sum %y : tensor<2x8xf32> -> tensor<f32>
  %m = infir2.reduce_sum %n : tensor<4xf32> -> tensor<f32>
  %s = infir2.add %l, %m : tensor<f32>, tensor<f32>
  return %s : tensor<f32>
}
