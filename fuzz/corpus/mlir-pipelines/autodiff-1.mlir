func.func @forward(%emb: tensor<16x8xf32> {infir2.param = #infir2.param<"emb", normal(std = 0.02)>},
                   %nw: tensor<8xf32> {infir2.param = #infir2.param<"nw", ones>},
                   %ids: tensor<1x4xi32>, %pos: tensor<4xi32>, %t: tensor<1x4xi32>) -> tensor<f32> {
  %h = infir2.embedding %emb[%ids] : tensor<16x8xf32>[tensor<1x4xi32>] -> tensor<1x4x8xf32>
  %r = infir2.rope %h, %pos {head_dim = 8 : i64, theta = 1.0e4 : f64} : tensor<1x4x8xf32>, tensor<4xi32>
  %s = infir2.swiglu %r, %r : tensor<1x4x8xf32>
  %res = infir2.add %r, %s : tensor<1x4x8xf32>, tensor<1x4x8xf32>
  %n = infir2.rms_norm %res, %nw {epsilon = 1.0e-6 : f64} : tensor<1x4x8xf32>, tensor<8xf32>
  %logits = infir2.matmul %n, %emb {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
  %l = infir2.cross_entropy %logits, %t : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
  return %l : tensor<f32>
}
