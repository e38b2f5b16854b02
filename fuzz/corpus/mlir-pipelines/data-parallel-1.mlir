func.func @optimizer_step(%m0: tensor<5x4xf32> {infir2.master_of = "w"}, %m1: tensor<4xf32> {infir2.master_of = "b"},
                          %g0: tensor<5x4xf32> {infir2.grad_of = "w"}, %g1: tensor<4xf32> {infir2.grad_of = "b"},
                          %a0: tensor<5x4xf32> {infir2.moment1_of = "w"}, %a1: tensor<4xf32> {infir2.moment1_of = "b"},
                          %v0: tensor<5x4xf32> {infir2.moment2_of = "w"}, %v1: tensor<4xf32> {infir2.moment2_of = "b"},
                          %lr: tensor<f32>, %t: tensor<f32>, %s: tensor<f32>)
    -> (tensor<5x4xf32> {infir2.master_of = "w"}, tensor<4xf32> {infir2.master_of = "b"},
        tensor<5x4xf32> {infir2.moment1_of = "w"}, tensor<4xf32> {infir2.moment1_of = "b"},
        tensor<5x4xf32> {infir2.moment2_of = "w"}, tensor<4xf32> {infir2.moment2_of = "b"},
        tensor<5x4xbf16> {infir2.working_copy_of = "w"}, tensor<4xf32> {infir2.working_copy_of = "b"}) {
  %n = infir2.global_norm %g0, %g1 scale %s : tensor<5x4xf32>, tensor<4xf32>
  %w, %wa, %wv = infir2.adamw %m0, %g0, %a0, %v0, %lr, %t, %s, %n {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<5x4xf32>
  %b, %ba, %bv = infir2.adamw %m1, %g1, %a1, %v1, %lr, %t, %s, %n {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.0 : f64, max_grad_norm = 1.0 : f64} : tensor<4xf32>
  %c = infir2.convert %w : tensor<5x4xf32> -> tensor<5x4xbf16>
  return %w, %b, %wa, %ba, %wv, %bv, %c, %b : tensor<5x4xf32>, tensor<4xf32>, tensor<5x4xf32>, tensor<4xf32>, tensor<5x4xf32>, tensor<4xf32>, tensor<5x4xbf16>, tensor<4xf32>
}
