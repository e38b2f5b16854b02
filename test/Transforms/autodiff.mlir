// RUN: infir2-opt %s --split-input-file --infir2-autodiff | FileCheck %s

// Tests the training step's signature (forward arguments, then one FP32
// accumulator per parameter; the loss, then the updated accumulators), and
// the backward of a linear layer with a BF16 weight: dW = dYᵀ·X over the
// flattened batch, converted to FP32 and added to its accumulator. The input
// x is not a parameter, so no gradient is computed for it.
// CHECK-LABEL: func.func @forward(
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[^:]+]]: tensor<8x4xbf16> {infir2.param = #infir2.param<"w", normal(std = 2.000000e-02)>}
// CHECK-SAME: %[[X:[^:]+]]: tensor<2x3x4xbf16>
// CHECK-SAME: %[[ACC:[^:]+]]: tensor<8x4xf32> {infir2.grad_of = "w"}
// CHECK-SAME: -> (tensor<f32>, tensor<8x4xf32> {infir2.grad_of = "w"})
// CHECK: %[[Y:.+]] = infir2.matmul %[[X]], %[[W]] {transpose_rhs}
// CHECK: %[[LOSS:.+]] = infir2.reduce_sum %[[Y]] : tensor<2x3x8xbf16> -> tensor<bf16>
// CHECK: %[[SEED:.+]] = arith.constant dense<1.000000e+00> : tensor<bf16>
// CHECK: %[[DY:.+]] = infir2.add %{{.+}}, %[[SEED]] : tensor<2x3x8xbf16>, tensor<bf16>
// CHECK-NOT: infir2.matmul %[[DY]], %[[W]]
// CHECK: %[[XF:.+]] = infir2.reshape %[[X]] : tensor<2x3x4xbf16> -> tensor<6x4xbf16>
// CHECK: %[[DYF:.+]] = infir2.reshape %[[DY]] : tensor<2x3x8xbf16> -> tensor<6x8xbf16>
// CHECK: %[[DW:.+]] = infir2.matmul %[[DYF]], %[[XF]] {transpose_lhs} : tensor<6x8xbf16>, tensor<6x4xbf16> -> tensor<8x4xbf16>
// CHECK: %[[LOSS32:.+]] = infir2.convert %[[LOSS]] : tensor<bf16> -> tensor<f32>
// CHECK: %[[DW32:.+]] = infir2.convert %[[DW]] : tensor<8x4xbf16> -> tensor<8x4xf32>
// CHECK: %[[NEW:.+]] = infir2.add %[[ACC]], %[[DW32]] : tensor<8x4xf32>, tensor<8x4xf32>
// CHECK: return %[[LOSS32]], %[[NEW]]
func.func @forward(%w: tensor<8x4xbf16> {infir2.param = #infir2.param<"w", normal(std = 0.02)>},
                   %x: tensor<2x3x4xbf16>) -> tensor<bf16> {
  %y = infir2.matmul %x, %w {transpose_rhs} : tensor<2x3x4xbf16>, tensor<8x4xbf16> -> tensor<2x3x8xbf16>
  %l = infir2.reduce_sum %y : tensor<2x3x8xbf16> -> tensor<bf16>
  return %l : tensor<bf16>
}

// -----

// Tests that a value used twice (a residual) gets the sum of both gradients,
// and that each op's rule produces its gradient op.
// CHECK-LABEL: func.func @train_step(
// CHECK: infir2.cross_entropy_grad
// CHECK: infir2.rms_norm_grad
// CHECK: infir2.swiglu_grad
// CHECK: %[[SUM:.+]] = infir2.add %{{.+}}, %{{.+}} : tensor<1x4x8xf32>, tensor<1x4x8xf32>
// CHECK: infir2.rope_grad
// CHECK: infir2.embedding_grad %{{.+}}, %{{.+}} : tensor<1x4xi32>, tensor<1x4x8xf32> -> tensor<16x8xf32>
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

