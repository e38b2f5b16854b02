// RUN: infir2-opt %s --infir2-chunk-loss="tokens=4" --split-input-file | FileCheck %s
// RUN: infir2-opt %s --infir2-chunk-loss="chunk-bytes=256" --split-input-file | FileCheck %s --check-prefix=AUTO
// The training step keeps no whole-logits tensor anywhere:
// RUN: infir2-opt %s --infir2-chunk-loss="tokens=4" --split-input-file | awk '/func.func @train\(/ {on = 1} on && /^  }/ {on = 0} on' > %t.train.mlir
// RUN: not grep 'tensor<2x4x16x' %t.train.mlir
// RUN: grep -c 'infir2.slice' %t.train.mlir | FileCheck %s --check-prefix=SLICES
// SLICES: 6

// A training step's LM head as the recipes leave it (tied weight [V, D],
// FP32 logits, BF16 logits' gradient, the weight gradient into its FP32
// accumulator): 8 tokens in 2 chunks of 4. Each chunk slices the hidden
// rows, targets and mask, makes its logits, its share of the loss (divided
// by the whole batch's weight), the logits' gradient, its rows of the input
// gradient and adds its weight gradient to the accumulator; the input
// gradient's rows are concatenated. Nothing of [8, 16] logits is left.
// CHECK-LABEL: func.func @train
// CHECK-SAME: (%[[H:.+]]: tensor<2x4x8xbf16>, %[[W:.+]]: tensor<16x8xbf16>, %[[T:.+]]: tensor<2x4xi32>, %[[M:.+]]: tensor<2x4xf32>, %[[G:.+]]: tensor<16x8xf32>)
// CHECK: %[[ONE:.+]] = arith.constant
// CHECK: %[[HR:.+]] = infir2.reshape %[[H]] : tensor<2x4x8xbf16> -> tensor<8x8xbf16>
// CHECK: %[[TR:.+]] = infir2.reshape %[[T]] : tensor<2x4xi32> -> tensor<8xi32>
// CHECK: %[[MR:.+]] = infir2.reshape %[[M]] : tensor<2x4xf32> -> tensor<8xf32>
// CHECK: %[[WS:.+]] = infir2.loss_weight %[[TR]] mask %[[MR]] {infir2.chunked = "the LM head and the loss in 2 chunks of 4 tokens: 256 B of logits live at a time instead of 512 B"} : tensor<8xi32>, tensor<8xf32> -> tensor<f32>
// CHECK: %[[H0:.+]] = infir2.slice %[[HR]][0] : tensor<8x8xbf16> -> tensor<4x8xbf16>
// CHECK: %[[T0:.+]] = infir2.slice %[[TR]][0] : tensor<8xi32> -> tensor<4xi32>
// CHECK: %[[M0:.+]] = infir2.slice %[[MR]][0] : tensor<8xf32> -> tensor<4xf32>
// CHECK: %[[L0:.+]] = infir2.matmul %[[H0]], %[[W]] {role = "head", transpose_rhs} : tensor<4x8xbf16>, tensor<16x8xbf16> -> tensor<4x16xf32>
// CHECK: %[[P0:.+]] = infir2.cross_entropy %[[L0]], %[[T0]] mask %[[M0]] divisor %[[WS]]
// CHECK: %[[D0:.+]] = infir2.cross_entropy_grad %[[L0]], %[[T0]], %[[ONE]] mask %[[M0]] divisor %[[WS]] : {{.*}} -> tensor<4x16xbf16>
// CHECK: %[[X0:.+]] = infir2.matmul %[[D0]], %[[W]] {role = "dgrad"} : tensor<4x16xbf16>, tensor<16x8xbf16> -> tensor<4x8xbf16>
// CHECK: %[[G0:.+]] = infir2.matmul %[[D0]], %[[H0]] acc(%[[G]] : tensor<16x8xf32>) {role = "wgrad", transpose_lhs}
// CHECK: %[[H1:.+]] = infir2.slice %[[HR]][4]
// CHECK: %[[P1:.+]] = infir2.cross_entropy %{{.+}} divisor %[[WS]]
// CHECK: %[[LOSS:.+]] = infir2.add %[[P0]], %[[P1]] : tensor<f32>, tensor<f32>
// CHECK: %[[X1:.+]] = infir2.matmul %{{.+}}, %[[W]] {role = "dgrad"}
// CHECK: %[[G1:.+]] = infir2.matmul %{{.+}}, %[[H1]] acc(%[[G0]] : tensor<16x8xf32>) {role = "wgrad", transpose_lhs}
// CHECK: %[[X:.+]] = infir2.concat %[[X0]], %[[X1]] : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<8x8xbf16>
// CHECK: %[[XR:.+]] = infir2.reshape %[[X]] : tensor<8x8xbf16> -> tensor<2x4x8xbf16>
// CHECK: return %[[LOSS]], %[[XR]], %[[G1]]
// AUTO-LABEL: func.func @train
// AUTO: infir2.chunked = "the LM head and the loss in 2 chunks of 4 tokens
func.func @train(%h: tensor<2x4x8xbf16>, %w: tensor<16x8xbf16>, %t: tensor<2x4xi32>, %m: tensor<2x4xf32>, %acc: tensor<16x8xf32>) -> (tensor<f32>, tensor<2x4x8xbf16>, tensor<16x8xf32>) {
  %l = infir2.matmul %h, %w {role = "head", transpose_rhs} : tensor<2x4x8xbf16>, tensor<16x8xbf16> -> tensor<2x4x16xf32>
  %loss = infir2.cross_entropy %l, %t mask %m : tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<2x4xf32> -> tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %dl = infir2.cross_entropy_grad %l, %t, %one mask %m : tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>, tensor<2x4xf32> -> tensor<2x4x16xbf16>
  %dh = infir2.matmul %dl, %w {role = "dgrad"} : tensor<2x4x16xbf16>, tensor<16x8xbf16> -> tensor<2x4x8xbf16>
  %hr = infir2.reshape %h : tensor<2x4x8xbf16> -> tensor<8x8xbf16>
  %dlr = infir2.reshape %dl : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
  %dw = infir2.matmul %dlr, %hr acc(%acc : tensor<16x8xf32>) {role = "wgrad", transpose_lhs} : tensor<8x16xbf16>, tensor<8x8xbf16> -> tensor<16x8xf32>
  return %loss, %dh, %dw : tensor<f32>, tensor<2x4x8xbf16>, tensor<16x8xf32>
}

// -----

// An evaluation's loss (no gradient): the logits and the loss in chunks.
// CHECK-LABEL: func.func @eval
// CHECK: %[[WS:.+]] = infir2.loss_weight %{{.+}} : tensor<8xi32> -> tensor<f32>
// CHECK-COUNT-2: infir2.cross_entropy %{{.+}}, %{{.+}} divisor %[[WS]] : tensor<4x16xf32>, tensor<4xi32> -> tensor<f32>
// CHECK: %[[LOSS:.+]] = infir2.add
// CHECK: return %[[LOSS]]
func.func @eval(%h: tensor<2x4x8xbf16>, %w: tensor<16x8xbf16>, %t: tensor<2x4xi32>) -> tensor<f32> {
  %l = infir2.matmul %h, %w {transpose_rhs} : tensor<2x4x8xbf16>, tensor<16x8xbf16> -> tensor<2x4x16xf32>
  %loss = infir2.cross_entropy %l, %t : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Left alone: the logits are also returned (a whole-logits reader), and a
// loss whose logits do not come from a GEMM.
// CHECK-LABEL: func.func @logits_read
// CHECK-NOT: infir2.slice
// CHECK: infir2.cross_entropy %{{.+}} : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
// CHECK: infir2.cross_entropy %{{.+}} : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
func.func @logits_read(%h: tensor<2x4x8xbf16>, %w: tensor<16x8xbf16>, %t: tensor<2x4xi32>, %x: tensor<2x4x16xf32>) -> (tensor<f32>, tensor<2x4x16xf32>, tensor<f32>) {
  %l = infir2.matmul %h, %w {transpose_rhs} : tensor<2x4x8xbf16>, tensor<16x8xbf16> -> tensor<2x4x16xf32>
  %loss = infir2.cross_entropy %l, %t : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
  %other = infir2.cross_entropy %x, %t : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
  return %loss, %l, %other : tensor<f32>, tensor<2x4x16xf32>, tensor<f32>
}

// -----

// Left alone: the logits' gradient has a reader the pass does not know (it
// is returned whole).
// CHECK-LABEL: func.func @gradient_read
// CHECK-NOT: infir2.slice
func.func @gradient_read(%h: tensor<2x4x8xbf16>, %w: tensor<16x8xbf16>, %t: tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x8xbf16>, tensor<2x4x16xbf16>) {
  %l = infir2.matmul %h, %w {transpose_rhs} : tensor<2x4x8xbf16>, tensor<16x8xbf16> -> tensor<2x4x16xf32>
  %loss = infir2.cross_entropy %l, %t : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %dl = infir2.cross_entropy_grad %l, %t, %one : tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32> -> tensor<2x4x16xbf16>
  %dh = infir2.matmul %dl, %w : tensor<2x4x16xbf16>, tensor<16x8xbf16> -> tensor<2x4x8xbf16>
  return %loss, %dh, %dl : tensor<f32>, tensor<2x4x8xbf16>, tensor<2x4x16xbf16>
}

// -----

// Left alone: a weight gradient in BF16 without an accumulator (adding the
// chunks would round it once per chunk).
// CHECK-LABEL: func.func @bf16_weight_grad
// CHECK-NOT: infir2.slice
func.func @bf16_weight_grad(%h: tensor<2x4x8xbf16>, %w: tensor<16x8xbf16>, %t: tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x8xbf16>, tensor<16x8xbf16>) {
  %l = infir2.matmul %h, %w {transpose_rhs} : tensor<2x4x8xbf16>, tensor<16x8xbf16> -> tensor<2x4x16xf32>
  %loss = infir2.cross_entropy %l, %t : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %dl = infir2.cross_entropy_grad %l, %t, %one : tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32> -> tensor<2x4x16xbf16>
  %dh = infir2.matmul %dl, %w : tensor<2x4x16xbf16>, tensor<16x8xbf16> -> tensor<2x4x8xbf16>
  %hr = infir2.reshape %h : tensor<2x4x8xbf16> -> tensor<8x8xbf16>
  %dlr = infir2.reshape %dl : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
  %dw = infir2.matmul %dlr, %hr {transpose_lhs} : tensor<8x16xbf16>, tensor<8x8xbf16> -> tensor<16x8xbf16>
  return %loss, %dh, %dw : tensor<f32>, tensor<2x4x8xbf16>, tensor<16x8xbf16>
}

// -----

