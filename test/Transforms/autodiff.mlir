// RUN: infir2-opt %s --split-input-file --infir2-autodiff | FileCheck %s

// Tests the training step's signature (forward arguments, then one FP32
// accumulator per parameter; the loss, then the updated accumulators), and
// the backward of a linear layer with a BF16 weight: dW = dYᵀ·X over the
// flattened batch (tagged as the weight-gradient GEMM of "w"), converted to
// FP32 and added to its accumulator. The input
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
// CHECK: %[[DW:.+]] = infir2.matmul %[[DYF]], %[[XF]] {infir2.gemm_grad_operand = 0 : i64, infir2.gemm_role = "wgrad", infir2.gemm_weight = "w", transpose_lhs} : tensor<6x8xbf16>, tensor<6x4xbf16> -> tensor<8x4xbf16>
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


// -----

// Tests the rules of the remaining ops: attention (one attention_grad for
// query, key and value), silu, a broadcast mul (the scale's gradient is
// summed over the leading dimensions), transpose (inverse permutation) and
// reshape.
// CHECK-LABEL: func.func @train_step(
// CHECK: infir2.reshape %{{.+}} : tensor<48xf32> -> tensor<2x6x4xf32>
// CHECK: infir2.transpose %{{.+}} [0, 2, 1] : tensor<2x6x4xf32> -> tensor<2x4x6xf32>
// CHECK: infir2.silu_grad
// CHECK: infir2.reduce_sum %{{.+}} : tensor<2x4x6xf32> -> tensor<6xf32>
// CHECK: %{{.+}}, %[[DK:.+]], %[[DV:.+]] = infir2.attention_grad {{.*}} {causal, head_dim = 3 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64}
// The shared key/value tensor receives the sum of both gradients.
// CHECK: infir2.add %[[DK]], %[[DV]] : tensor<2x4x3xf32>, tensor<2x4x3xf32>
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
