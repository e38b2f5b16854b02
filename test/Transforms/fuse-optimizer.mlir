// RUN: infir2-opt %s --split-input-file --infir2-fuse-optimizer | FileCheck %s

// Tests that the updates of a step become one group at the first update's
// place, each tensor with its weight decay, and that each conversion of an
// updated master to its working copy joins the group (the second master
// has none: it is returned as is).

// CHECK-LABEL: func.func @optimizer_step(
// CHECK: %[[N:.+]] = infir2.global_norm
// CHECK-NEXT: %[[P:.+]]:3, %[[M:.+]]:3, %[[V:.+]]:3, %[[W:.+]]:2 = infir2.adamw_group (%arg0, %arg1, %arg2) grads(%arg3, %arg4, %arg5) moments(%arg6, %arg7, %arg8) (%arg9, %arg10, %arg11) lr %arg12 step %arg13 scale %arg14 norm %[[N]] {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, epsilon = 1.000000e-08 : f64, max_grad_norm = 1.000000e+00 : f64, weight_decays = array<f64: 1.000000e-01, 0.000000e+00, 5.000000e-02>, working = array<i64: 0, 2>} : tensor<8x4xf32>, tensor<4xf32>, tensor<4x4xf32> -> tensor<8x4xbf16>, tensor<4x4xbf16>
// CHECK-NOT: infir2.adamw
// CHECK-NOT: infir2.convert
// CHECK: return %[[P]]#0, %[[W]]#0, %[[P]]#1, %[[W]]#1, %[[V]]#2, %[[V]]#1
func.func @optimizer_step(%p0: tensor<8x4xf32>, %p1: tensor<4xf32>, %p2: tensor<4x4xf32>,
                          %g0: tensor<8x4xf32>, %g1: tensor<4xf32>, %g2: tensor<4x4xf32>,
                          %m0: tensor<8x4xf32>, %m1: tensor<4xf32>, %m2: tensor<4x4xf32>,
                          %v0: tensor<8x4xf32>, %v1: tensor<4xf32>, %v2: tensor<4x4xf32>,
                          %lr: tensor<f32>, %t: tensor<f32>, %s: tensor<f32>)
    -> (tensor<8x4xf32>, tensor<8x4xbf16>, tensor<4xf32>, tensor<4x4xbf16>, tensor<4x4xf32>, tensor<4xf32>) {
  %n = infir2.global_norm %g0, %g1, %g2 scale %s : tensor<8x4xf32>, tensor<4xf32>, tensor<4x4xf32>
  %a:3 = infir2.adamw %p0, %g0, %m0, %v0, %lr, %t, %s, %n {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<8x4xf32>
  %w0 = infir2.convert %a#0 : tensor<8x4xf32> -> tensor<8x4xbf16>
  %b:3 = infir2.adamw %p1, %g1, %m1, %v1, %lr, %t, %s, %n {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.0 : f64, max_grad_norm = 1.0 : f64} : tensor<4xf32>
  %c:3 = infir2.adamw %p2, %g2, %m2, %v2, %lr, %t, %s, %n {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.05 : f64, max_grad_norm = 1.0 : f64} : tensor<4x4xf32>
  %w2 = infir2.convert %c#0 : tensor<4x4xf32> -> tensor<4x4xbf16>
  return %a#0, %w0, %b#0, %w2, %c#2, %b#2 : tensor<8x4xf32>, tensor<8x4xbf16>, tensor<4xf32>, tensor<4x4xbf16>, tensor<4x4xf32>, tensor<4xf32>
}

// -----

// Tests what stays: an update with another learning rate (or any other
// shared input or setting) than the first, and one whose operand is made
// after the first update; a single update is not a group.

// CHECK-LABEL: func.func @other_settings(
// CHECK: infir2.adamw_group (%arg0, %arg0)
// CHECK: infir2.adamw %arg0, %arg1, %arg1, %arg1, %arg3,
// CHECK-NOT: adamw_group
func.func @other_settings(%p: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>, %lr2: tensor<f32>, %s: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a:3 = infir2.adamw %p, %g, %g, %g, %lr, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<4xf32>
  %b:3 = infir2.adamw %p, %g, %g, %g, %lr2, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<4xf32>
  %c:3 = infir2.adamw %p, %g, %g, %g, %lr, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<4xf32>
  return %a#0, %b#0, %c#0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @operand_made_later(
// CHECK-COUNT-2: infir2.adamw %
// CHECK-NOT: adamw_group
func.func @operand_made_later(%p: tensor<4xf32>, %g: tensor<4xf32>, %s: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a:3 = infir2.adamw %p, %g, %g, %g, %s, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<4xf32>
  %b:3 = infir2.adamw %a#0, %g, %g, %g, %s, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<4xf32>
  return %a#0, %b#0 : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @single(
// CHECK: infir2.adamw %
// CHECK-NOT: adamw_group
func.func @single(%p: tensor<4xf32>, %g: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xf32> {
  %a:3 = infir2.adamw %p, %g, %g, %g, %s, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<4xf32>
  return %a#0 : tensor<4xf32>
}

// -----

// Tests that updates with BF16 moments fuse into a group with BF16 moments,
// and that updates whose moments differ in type are not grouped together.
// CHECK-LABEL: func.func @bf16_moments(
// CHECK: infir2.adamw_group (%{{.+}}, %{{.+}}) {{.*}} : tensor<4xf32>, tensor<4xf32> moments bf16
// CHECK-NOT: infir2.adamw_group
// CHECK: infir2.adamw {{.*}} : tensor<4xf32>
func.func @bf16_moments(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xbf16>, %lr: tensor<f32>, %s: tensor<f32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a:3 = infir2.adamw %p, %g, %m, %m, %lr, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<4xf32> moments bf16
  %b:3 = infir2.adamw %p, %g, %m, %m, %lr, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.0 : f64, max_grad_norm = 1.0 : f64} : tensor<4xf32> moments bf16
  %c:3 = infir2.adamw %p, %g, %g, %g, %lr, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<4xf32>
  return %a#0, %b#0, %c#0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
