func.func @optimizer_step(%p: tensor<256xf32>, %g0: tensor<256xf32> {infir2.grad_of = "a"},
                          %g1: tensor<64xf32> {infir2.grad_of = "b"}, %g2: tensor<64xf32> {infir2.grad_of = "c"},
                          %g3: tensor<256xf32> {infir2.grad_of = "d"}, %s: tensor<f32>) -> tensor<f32> {
  %n = infir2.global_norm %g0, %g1, %g2, %g3 scale %s : tensor<256xf32>, tensor<64xf32>, tensor<64xf32>, tensor<256xf32>
  return %n : tensor<f32>
}
