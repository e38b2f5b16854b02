func.func @forward(%q: tensor<2x4x6xf32> {infir2.param = #infir2.param<"q", normal(std = 1.0)>},
                   %kv: tensor<2x4x3xf32> {infir2.param = #infir2.param<"kv", normal(std = 1.0)>},
                   %s: tensor<6xf32> {infir2.param = #infir2.param<"s", ones>}) -> tensor<f32> {
  %o = infir2.attention %q, %kv, %kv {causal, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 3 : i64}
      : tensor<2x4x6xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32> -> tensor<2x4x6xf32>
  %m = infir2.mul %o, %s : tensor<2x4x6xf32>, tensor<6xf32>
  %a = infir2.silu %m : tensor<2x4x6xf32>
  %t = infir2.transpose %a [0, 2, 1] : tensor<2x4x6xf32> -> tensor<2x6x4xf32>
  %r = infir2.reshape %t : tensor<2x6x4xf32> -> tensor<48xf32>
  %l = infir2.reduce_sum %r : tensor<48xf32> -> tensor<f32>
  return %l : tensor<f32>
}
