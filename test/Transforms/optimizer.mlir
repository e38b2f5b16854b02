// RUN: infir2-opt %s --infir2-optimizer | FileCheck %s
// RUN: infir2-opt %s --infir2-optimizer="optimizer=sgd weight-decay=0.01 grad-clip=0 decay-1d step-name=sgd_step" | FileCheck %s --check-prefix=SGD
// RUN: infir2-opt %s --infir2-optimizer="optimizer-state=bf16" | FileCheck %s --check-prefix=BF16
// RUN: infir2-opt %s --infir2-optimizer="optimizer-state=bf16 beta2=0.995" | FileCheck %s --check-prefix=BF16

// Tests the AdamW step: FP32 masters, gradients and moments per parameter,
// the scalar runtime inputs, one global norm over the scaled gradients, an
// adamw per parameter (no weight decay on the 1-D norm weight), BF16 working
// copies for BF16 parameters and an FP32 parameter passed through.
// CHECK-LABEL: func.func @optimizer_step(
// CHECK-SAME: %[[PW:[^:]+]]: tensor<8x4xf32> {infir2.master_of = "w"}
// CHECK-SAME: %[[PN:[^:]+]]: tensor<4xf32> {infir2.master_of = "norm"}
// CHECK-SAME: %[[GW:[^:]+]]: tensor<8x4xf32> {infir2.grad_of = "w"}
// CHECK-SAME: %[[GN:[^:]+]]: tensor<4xf32> {infir2.grad_of = "norm"}
// CHECK-SAME: %[[MW:[^:]+]]: tensor<8x4xf32> {infir2.moment1_of = "w"}
// CHECK-SAME: {infir2.moment1_of = "norm"}
// CHECK-SAME: %[[VW:[^:]+]]: tensor<8x4xf32> {infir2.moment2_of = "w"}
// CHECK-SAME: {infir2.moment2_of = "norm"}
// CHECK-SAME: %[[LR:[^:]+]]: tensor<f32> {infir2.input = "learning_rate"}
// CHECK-SAME: %[[STEP:[^:]+]]: tensor<f32> {infir2.input = "step"}
// CHECK-SAME: %[[SCALE:[^:]+]]: tensor<f32> {infir2.input = "grad_scale"}
// CHECK-SAME: -> (tensor<8x4xf32> {infir2.master_of = "w"}, tensor<4xf32> {infir2.master_of = "norm"},
// CHECK-SAME: tensor<8x4xbf16> {infir2.working_copy_of = "w"}, tensor<4xf32> {infir2.working_copy_of = "norm"}, tensor<f32>)
// CHECK: %[[NORM:.+]] = infir2.global_norm %[[GW]], %[[GN]] scale %[[SCALE]] : tensor<8x4xf32>, tensor<4xf32>
// CHECK: %[[NEWW:[^,]+]], %{{.+}}, %{{.+}} = infir2.adamw %[[PW]], %[[GW]], %[[MW]], %[[VW]], %[[LR]], %[[STEP]], %[[SCALE]], %[[NORM]] {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, epsilon = 1.000000e-08 : f64, max_grad_norm = 1.000000e+00 : f64, weight_decay = 1.000000e-01 : f64} : tensor<8x4xf32>
// CHECK: %[[WORK:.+]] = infir2.convert %[[NEWW]] : tensor<8x4xf32> -> tensor<8x4xbf16>
// CHECK: %[[NEWN:[^,]+]], %{{.+}}, %{{.+}} = infir2.adamw %[[PN]], {{.*}} weight_decay = 0.000000e+00 : f64} : tensor<4xf32>
// CHECK: return %[[NEWW]], %[[NEWN]], {{.*}}, %[[WORK]], %[[NEWN]], %[[NORM]]

// Tests optimizer-state=bf16: the moments, arguments and results, are BF16;
// masters, gradients and the update's arithmetic stay FP32.
// BF16-LABEL: func.func @optimizer_step(
// BF16-SAME: tensor<8x4xf32> {infir2.master_of = "w"}
// BF16-SAME: tensor<8x4xf32> {infir2.grad_of = "w"}
// BF16-SAME: tensor<8x4xbf16> {infir2.moment1_of = "w"}
// BF16-SAME: tensor<4xbf16> {infir2.moment1_of = "norm"}
// BF16-SAME: tensor<8x4xbf16> {infir2.moment2_of = "w"}
// BF16-SAME: tensor<4xbf16> {infir2.moment2_of = "norm"}
// BF16-SAME: -> (tensor<8x4xf32> {infir2.master_of = "w"}, tensor<4xf32> {infir2.master_of = "norm"}, tensor<8x4xbf16> {infir2.moment1_of = "w"}
// BF16: infir2.adamw {{.*}} : tensor<8x4xf32> moments bf16
// BF16: infir2.adamw {{.*}} : tensor<4xf32> moments bf16

// Tests the SGD step: no moments and no step input; options reach the ops.
// SGD-LABEL: func.func @sgd_step(
// SGD-SAME: {infir2.grad_of = "norm"}, %[[LR:[^:]+]]: tensor<f32> {infir2.input = "learning_rate"}, %[[SCALE:[^:]+]]: tensor<f32> {infir2.input = "grad_scale"})
// SGD-NOT: moment
// SGD: infir2.sgd {{.*}} {max_grad_norm = 0.000000e+00 : f64, weight_decay = 1.000000e-02 : f64} : tensor<8x4xf32>
// SGD: infir2.sgd {{.*}} {max_grad_norm = 0.000000e+00 : f64, weight_decay = 1.000000e-02 : f64} : tensor<4xf32>
func.func @forward(%w: tensor<8x4xbf16> {infir2.param = #infir2.param<"w", normal(std = 0.02)>},
                   %n: tensor<4xf32> {infir2.param = #infir2.param<"norm", ones>},
                   %x: tensor<2x4xbf16>) -> tensor<f32> {
  %y = infir2.matmul %x, %w {transpose_rhs} : tensor<2x4xbf16>, tensor<8x4xbf16> -> tensor<2x8xf32>
  %l = infir2.reduce_sum %y : tensor<2x8xf32> -> tensor<f32>
  %m = infir2.reduce_sum %n : tensor<4xf32> -> tensor<f32>
  %s = infir2.add %l, %m : tensor<f32>, tensor<f32>
  return %s : tensor<f32>
}
