func.func @forward(%w: tensor<8x4xbf16> {infir2.param = #infir2.param<"w", normal(std = 0.02)>},
                   %x: tensor<2x3x4xbf16>) -> tensor<bf16> {
  %y = infir2.matmul %x, %w {transpose_rhs} : tensor<2x3x4xbf16>, tensor<8x4xbf16> -> tensor<2x3x8xbf16>
  %l = infir2.reduce_sum %y : tensor<2x3x8xbf16> -> tensor<bf16>
  return %l : tensor<bf16>
}
