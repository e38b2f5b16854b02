// RUN: infir2-opt %s --split-input-file --infir2-fuse-accumulation | FileCheck %s

// Tests that a BF16 weight gradient, widened and added to its FP32
// accumulator (either operand order), becomes the GEMM with the
// accumulator, writing FP32, its recipe attributes kept.
// CHECK-LABEL: func.func @wgrad
// CHECK-SAME: (%[[DY:[^:]+]]: tensor<64x176xbf16>, %[[X:[^:]+]]: tensor<64x32xbf16>, %[[ACC:[^:]+]]: tensor<176x32xf32>, %[[ACC2:[^:]+]]: tensor<176x32xf32>)
// CHECK-NEXT: %[[G:.+]] = infir2.matmul %[[DY]], %[[X]] acc(%[[ACC]] : tensor<176x32xf32>) {infir2.gemm_role = "wgrad", transpose_lhs} : tensor<64x176xbf16>, tensor<64x32xbf16> -> tensor<176x32xf32>
// CHECK-NEXT: %[[H:.+]] = infir2.matmul %[[DY]], %[[X]] acc(%[[ACC2]] : tensor<176x32xf32>) {transpose_lhs} : tensor<64x176xbf16>, tensor<64x32xbf16> -> tensor<176x32xf32>
// CHECK-NEXT: return %[[G]], %[[H]]
func.func @wgrad(%dy: tensor<64x176xbf16>, %x: tensor<64x32xbf16>, %acc: tensor<176x32xf32>, %acc2: tensor<176x32xf32>) -> (tensor<176x32xf32>, tensor<176x32xf32>) {
  %g = infir2.matmul %dy, %x {infir2.gemm_role = "wgrad", transpose_lhs} : tensor<64x176xbf16>, tensor<64x32xbf16> -> tensor<176x32xbf16>
  %w = infir2.convert %g : tensor<176x32xbf16> -> tensor<176x32xf32>
  %a = infir2.add %acc, %w : tensor<176x32xf32>, tensor<176x32xf32>
  %h = infir2.matmul %dy, %x {transpose_lhs} : tensor<64x176xbf16>, tensor<64x32xbf16> -> tensor<176x32xbf16>
  %v = infir2.convert %h : tensor<176x32xbf16> -> tensor<176x32xf32>
  %b = infir2.add %v, %acc2 : tensor<176x32xf32>, tensor<176x32xf32>
  return %a, %b : tensor<176x32xf32>, tensor<176x32xf32>
}

// -----

// Tests that the fused GEMM stays where the GEMM was (its operands die
// there), ahead of what ran between it and the add.
// CHECK-LABEL: func.func @stays
// CHECK-NEXT: infir2.matmul {{.*}} acc(
// CHECK-NEXT: infir2.add %{{.+}}, %{{.+}} : tensor<64x32xbf16>
func.func @stays(%dy: tensor<64x176xbf16>, %x: tensor<64x32xbf16>, %acc: tensor<176x32xf32>) -> (tensor<176x32xf32>, tensor<64x32xbf16>) {
  %g = infir2.matmul %dy, %x {transpose_lhs} : tensor<64x176xbf16>, tensor<64x32xbf16> -> tensor<176x32xbf16>
  %between = infir2.add %x, %x : tensor<64x32xbf16>, tensor<64x32xbf16>
  %w = infir2.convert %g : tensor<176x32xbf16> -> tensor<176x32xf32>
  %a = infir2.add %acc, %w : tensor<176x32xf32>, tensor<176x32xf32>
  return %a, %between : tensor<176x32xf32>, tensor<64x32xbf16>
}

// -----

// Tests a GEMM that writes FP32 already (no conversion between).
// CHECK-LABEL: func.func @f32_product
// CHECK-NEXT: %[[G:.+]] = infir2.matmul %{{.+}}, %{{.+}} acc(%{{.+}} : tensor<8x4xf32>) {transpose_lhs} : tensor<6x8xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
// CHECK-NEXT: return %[[G]]
func.func @f32_product(%dy: tensor<6x8xf32>, %x: tensor<6x4xf32>, %acc: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %g = infir2.matmul %dy, %x {transpose_lhs} : tensor<6x8xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
  %a = infir2.add %acc, %g : tensor<8x4xf32>, tensor<8x4xf32>
  return %a : tensor<8x4xf32>
}

// -----

// Tests the FP8 recipe's weight-gradient GEMM.
// CHECK-LABEL: func.func @fp8_wgrad
// CHECK-SAME: %[[ACC:[^:]+]]: tensor<256x512xf32>)
// CHECK-NEXT: %[[G:.+]] = fp8.scaled_matmul (%{{.+}}, %{{.+}} by #fp8.groups<128, dim = 1>), (%{{.+}}, %{{.+}} by #fp8.groups<128, dim = 1>) acc(%[[ACC]] : tensor<256x512xf32>) {infir2.gemm_role = "wgrad"} : (tensor<256x128xf8E4M3FN>, tensor<256x1xf32>), (tensor<512x128xf8E4M3FN>, tensor<512x1xf32>) -> tensor<256x512xf32>
// CHECK-NEXT: return %[[G]]
func.func @fp8_wgrad(%gq: tensor<256x128xf8E4M3FN>, %gs: tensor<256x1xf32>, %xq: tensor<512x128xf8E4M3FN>, %xs: tensor<512x1xf32>, %acc: tensor<256x512xf32>) -> tensor<256x512xf32> {
  %g = fp8.scaled_matmul (%gq, %gs by #fp8.groups<128, dim = 1>), (%xq, %xs by #fp8.groups<128, dim = 1>) {infir2.gemm_role = "wgrad"}
      : (tensor<256x128xf8E4M3FN>, tensor<256x1xf32>), (tensor<512x128xf8E4M3FN>, tensor<512x1xf32>) -> tensor<256x512xbf16>
  %w = infir2.convert %g : tensor<256x512xbf16> -> tensor<256x512xf32>
  %a = infir2.add %acc, %w : tensor<256x512xf32>, tensor<256x512xf32>
  return %a : tensor<256x512xf32>
}

// -----

// Tests what is left alone: an accumulator that is not an argument, a GEMM
// or conversion something else reads, a broadcast add, a BF16 add, and a
// GEMM that has an accumulator already.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: acc(%
// CHECK: acc(%arg3 : tensor<8x4xf32>)
// CHECK-NOT: acc(%
// CHECK: return
func.func @left_alone(%dy: tensor<6x8xbf16>, %x: tensor<6x4xbf16>, %acc: tensor<8x4xf32>, %acc2: tensor<8x4xf32>, %bias: tensor<4xf32>) -> (tensor<8x4xf32>, tensor<8x4xbf16>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xbf16>, tensor<8x4xf32>, tensor<8x4xf32>) {
  // Not an argument.
  %sum = infir2.add %acc, %acc : tensor<8x4xf32>, tensor<8x4xf32>
  %g1 = infir2.matmul %dy, %x {transpose_lhs} : tensor<6x8xbf16>, tensor<6x4xbf16> -> tensor<8x4xbf16>
  %w1 = infir2.convert %g1 : tensor<8x4xbf16> -> tensor<8x4xf32>
  %a1 = infir2.add %sum, %w1 : tensor<8x4xf32>, tensor<8x4xf32>
  // The GEMM read twice.
  %g2 = infir2.matmul %dy, %x {transpose_lhs} : tensor<6x8xbf16>, tensor<6x4xbf16> -> tensor<8x4xbf16>
  %w2 = infir2.convert %g2 : tensor<8x4xbf16> -> tensor<8x4xf32>
  %a2 = infir2.add %acc, %w2 : tensor<8x4xf32>, tensor<8x4xf32>
  // The conversion read twice.
  %g3 = infir2.matmul %dy, %x {transpose_lhs} : tensor<6x8xbf16>, tensor<6x4xbf16> -> tensor<8x4xbf16>
  %w3 = infir2.convert %g3 : tensor<8x4xbf16> -> tensor<8x4xf32>
  %a3 = infir2.add %acc, %w3 : tensor<8x4xf32>, tensor<8x4xf32>
  // A broadcast add (a bias), and a BF16 add.
  %g4 = infir2.matmul %dy, %x {transpose_lhs} : tensor<6x8xbf16>, tensor<6x4xbf16> -> tensor<8x4xf32>
  %a4 = infir2.add %g4, %bias : tensor<8x4xf32>, tensor<4xf32>
  %g5 = infir2.matmul %dy, %x {transpose_lhs} : tensor<6x8xbf16>, tensor<6x4xbf16> -> tensor<8x4xbf16>
  %a5 = infir2.add %g5, %g5 : tensor<8x4xbf16>, tensor<8x4xbf16>
  // An accumulator already: the outer add stays (acc2 is the only fusion).
  %g6 = infir2.matmul %dy, %x acc(%acc2 : tensor<8x4xf32>) {transpose_lhs} : tensor<6x8xbf16>, tensor<6x4xbf16> -> tensor<8x4xf32>
  %a6 = infir2.add %acc, %g6 : tensor<8x4xf32>, tensor<8x4xf32>
  return %a1, %g2, %a2, %w3, %a5, %a3, %a6 : tensor<8x4xf32>, tensor<8x4xbf16>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xbf16>, tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Tests a bias's, a norm weight's and an embedding table's gradient: each op
// adds into its FP32 accumulator itself (the norm's input gradient keeps its
// reader), with no conversion or add left.
// CHECK-LABEL: func.func @other_gradients
// CHECK-SAME: (%[[DY:[^:]+]]: tensor<4x8x16xbf16>, %[[X:[^:]+]]: tensor<4x8x16xbf16>, %[[W:[^:]+]]: tensor<16xbf16>, %[[IDS:[^:]+]]: tensor<4x8xi32>, %[[BACC:[^:]+]]: tensor<16xf32>, %[[WACC:[^:]+]]: tensor<16xf32>, %[[TACC:[^:]+]]: tensor<32x16xf32>)
// CHECK-NEXT: %[[B:.+]] = infir2.reduce_sum %[[DY]] acc(%[[BACC]] : tensor<16xf32>) : tensor<4x8x16xbf16> -> tensor<16xf32>
// CHECK-NEXT: %[[DX:.+]], %[[DW:.+]] = infir2.rms_norm_grad %[[X]], %[[W]], %[[DY]] acc(%[[WACC]] : tensor<16xf32>) {epsilon = {{.+}}} : tensor<4x8x16xbf16>, tensor<16xbf16>
// CHECK-NEXT: %[[T:.+]] = infir2.embedding_grad %[[IDS]], %[[DX]] acc(%[[TACC]] : tensor<32x16xf32>) : tensor<4x8xi32>, tensor<4x8x16xbf16> -> tensor<32x16xf32>
// CHECK-NEXT: return %[[B]], %[[DW]], %[[T]], %[[DX]]
func.func @other_gradients(%dy: tensor<4x8x16xbf16>, %x: tensor<4x8x16xbf16>, %w: tensor<16xbf16>, %ids: tensor<4x8xi32>, %bacc: tensor<16xf32>, %wacc: tensor<16xf32>, %tacc: tensor<32x16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<32x16xf32>, tensor<4x8x16xbf16>) {
  %db = infir2.reduce_sum %dy : tensor<4x8x16xbf16> -> tensor<16xbf16>
  %db32 = infir2.convert %db : tensor<16xbf16> -> tensor<16xf32>
  %b = infir2.add %bacc, %db32 : tensor<16xf32>, tensor<16xf32>
  %dx, %dw = infir2.rms_norm_grad %x, %w, %dy {epsilon = 1.0e-06 : f64} : tensor<4x8x16xbf16>, tensor<16xbf16>
  %dw32 = infir2.convert %dw : tensor<16xbf16> -> tensor<16xf32>
  %gw = infir2.add %dw32, %wacc : tensor<16xf32>, tensor<16xf32>
  %dt = infir2.embedding_grad %ids, %dx : tensor<4x8xi32>, tensor<4x8x16xbf16> -> tensor<32x16xbf16>
  %dt32 = infir2.convert %dt : tensor<32x16xbf16> -> tensor<32x16xf32>
  %t = infir2.add %tacc, %dt32 : tensor<32x16xf32>, tensor<32x16xf32>
  return %b, %gw, %t, %dx : tensor<16xf32>, tensor<16xf32>, tensor<32x16xf32>, tensor<4x8x16xbf16>
}

// -----

// Tests a tied embedding's gradient, the LM head's weight gradient plus the
// embedding's, summed in BF16 before it is widened: the GEMM adds into the
// accumulator where it was, then the embedding's gradient, moved after it,
// adds into that; the BF16 sum is gone.
// CHECK-LABEL: func.func @tied_embedding
// CHECK-SAME: %[[ACC:[^:]+]]: tensor<32x16xf32>)
// CHECK-NEXT: %[[H:.+]] = infir2.matmul %{{.+}}, %{{.+}} acc(%[[ACC]] : tensor<32x16xf32>) {transpose_lhs} : tensor<8x32xbf16>, tensor<8x16xbf16> -> tensor<32x16xf32>
// CHECK-NEXT: %[[T:.+]] = infir2.embedding_grad %{{.+}}, %{{.+}} acc(%[[H]] : tensor<32x16xf32>) : tensor<8xi32>, tensor<8x16xbf16> -> tensor<32x16xf32>
// CHECK-NEXT: return %[[T]]
func.func @tied_embedding(%ids: tensor<8xi32>, %dx: tensor<8x16xbf16>, %dlogits: tensor<8x32xbf16>, %h: tensor<8x16xbf16>, %acc: tensor<32x16xf32>) -> tensor<32x16xf32> {
  %dt = infir2.embedding_grad %ids, %dx : tensor<8xi32>, tensor<8x16xbf16> -> tensor<32x16xbf16>
  %dw = infir2.matmul %dlogits, %h {transpose_lhs} : tensor<8x32xbf16>, tensor<8x16xbf16> -> tensor<32x16xbf16>
  %sum = infir2.add %dw, %dt : tensor<32x16xbf16>, tensor<32x16xbf16>
  %sum32 = infir2.convert %sum : tensor<32x16xbf16> -> tensor<32x16xf32>
  %g = infir2.add %acc, %sum32 : tensor<32x16xf32>, tensor<32x16xf32>
  return %g : tensor<32x16xf32>
}

// -----

// Tests what a sum leaves alone: a part read elsewhere too (the add stays as
// it was), and a norm whose weight gradient would have to move past its
// input gradient's reader (the GEMM adds first; the norm's gradient is
// widened and added).
// CHECK-LABEL: func.func @sums_left_alone
// CHECK: %[[S:.+]] = infir2.add %{{.+}}, %{{.+}} : tensor<16xbf16>, tensor<16xbf16>
// CHECK: infir2.convert %[[S]]
// CHECK: %[[DX:.+]], %[[DW:.+]] = infir2.rms_norm_grad %{{.+}}, %{{.+}}, %{{.+}} {epsilon
// CHECK: %[[G:.+]] = infir2.reduce_sum %{{.+}} acc(%{{.+}} : tensor<16xf32>)
// CHECK: %[[W:.+]] = infir2.convert %[[DW]]
// CHECK: infir2.add %[[G]], %[[W]]
func.func @sums_left_alone(%dy: tensor<4x16xbf16>, %x: tensor<4x16xbf16>, %w: tensor<16xbf16>, %acc: tensor<16xf32>, %acc2: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xbf16>, tensor<16xf32>, tensor<4x16xbf16>) {
  %a = infir2.reduce_sum %dy : tensor<4x16xbf16> -> tensor<16xbf16>
  %b = infir2.reduce_sum %x : tensor<4x16xbf16> -> tensor<16xbf16>
  %s = infir2.add %a, %b : tensor<16xbf16>, tensor<16xbf16>
  %s32 = infir2.convert %s : tensor<16xbf16> -> tensor<16xf32>
  %r = infir2.add %acc, %s32 : tensor<16xf32>, tensor<16xf32>
  %dx, %dw = infir2.rms_norm_grad %x, %w, %dy {epsilon = 1.0e-06 : f64} : tensor<4x16xbf16>, tensor<16xbf16>
  %used = infir2.add %dx, %dx : tensor<4x16xbf16>, tensor<4x16xbf16>
  %c = infir2.reduce_sum %used : tensor<4x16xbf16> -> tensor<16xbf16>
  %sum2 = infir2.add %c, %dw : tensor<16xbf16>, tensor<16xbf16>
  %sum232 = infir2.convert %sum2 : tensor<16xbf16> -> tensor<16xf32>
  %r2 = infir2.add %acc2, %sum232 : tensor<16xf32>, tensor<16xf32>
  return %r, %b, %r2, %used : tensor<16xf32>, tensor<16xbf16>, tensor<16xf32>, tensor<4x16xbf16>
}

// -----

// Tests a residual and a sum of two GEMMs in BF16: the GEMM made after the
// other operand adds it as it writes (acc of the add's type, bf16), rounded
// once; the adds are gone.
// CHECK-LABEL: func.func @bf16_sums
// CHECK-SAME: (%[[H:[^:]+]]: tensor<8x16xbf16>, %[[X:[^:]+]]: tensor<8x16xbf16>, %[[W:[^:]+]]: tensor<16x16xbf16>, %[[V:[^:]+]]: tensor<16x16xbf16>)
// CHECK-NEXT: %[[R:.+]] = infir2.matmul %[[X]], %[[W]] acc(%[[H]] : tensor<8x16xbf16>) {transpose_rhs} : tensor<8x16xbf16>, tensor<16x16xbf16> -> tensor<8x16xbf16>
// CHECK-NEXT: %[[A:.+]] = infir2.matmul %[[X]], %[[V]] : tensor<8x16xbf16>, tensor<16x16xbf16> -> tensor<8x16xbf16>
// CHECK-NEXT: %[[S:.+]] = infir2.matmul %[[X]], %[[W]] acc(%[[A]] : tensor<8x16xbf16>) : tensor<8x16xbf16>, tensor<16x16xbf16> -> tensor<8x16xbf16>
// CHECK-NEXT: return %[[R]], %[[S]]
func.func @bf16_sums(%h: tensor<8x16xbf16>, %x: tensor<8x16xbf16>, %w: tensor<16x16xbf16>, %v: tensor<16x16xbf16>) -> (tensor<8x16xbf16>, tensor<8x16xbf16>) {
  %o = infir2.matmul %x, %w {transpose_rhs} : tensor<8x16xbf16>, tensor<16x16xbf16> -> tensor<8x16xbf16>
  %r = infir2.add %h, %o : tensor<8x16xbf16>, tensor<8x16xbf16>
  %a = infir2.matmul %x, %v : tensor<8x16xbf16>, tensor<16x16xbf16> -> tensor<8x16xbf16>
  %b = infir2.matmul %x, %w : tensor<8x16xbf16>, tensor<16x16xbf16> -> tensor<8x16xbf16>
  %s = infir2.add %a, %b : tensor<8x16xbf16>, tensor<8x16xbf16>
  return %r, %s : tensor<8x16xbf16>, tensor<8x16xbf16>
}

// -----

// Tests the FP8 GEMM's BF16 sum, the residual after an attention output.
// CHECK-LABEL: func.func @fp8_residual
// CHECK-NEXT: %[[Y:.+]] = fp8.scaled_matmul (%{{.+}}, %{{.+}} by #fp8.groups<128, dim = 1>), (%{{.+}}, %{{.+}} by #fp8.blocks<128, 128>) acc(%arg4 : tensor<64x128xbf16>) : (tensor<64x256xf8E4M3FN>, tensor<64x2xf32>), (tensor<128x256xf8E4M3FN>, tensor<1x2xf32>) -> tensor<64x128xbf16>
// CHECK-NEXT: return %[[Y]]
func.func @fp8_residual(%a: tensor<64x256xf8E4M3FN>, %as: tensor<64x2xf32>, %b: tensor<128x256xf8E4M3FN>, %bs: tensor<1x2xf32>, %h: tensor<64x128xbf16>) -> tensor<64x128xbf16> {
  %y = fp8.scaled_matmul (%a, %as by #fp8.groups<128, dim = 1>), (%b, %bs by #fp8.blocks<128, 128>)
      : (tensor<64x256xf8E4M3FN>, tensor<64x2xf32>), (tensor<128x256xf8E4M3FN>, tensor<1x2xf32>) -> tensor<64x128xbf16>
  %r = infir2.add %y, %h : tensor<64x128xbf16>, tensor<64x128xbf16>
  return %r : tensor<64x128xbf16>
}

// -----

// Tests the sums left as adds: a bias (broadcast), a GEMM read twice, an
// operand made after the GEMM (it would have to move), and an f16 sum (no
// f16 accumulator).
// CHECK-LABEL: func.func @bf16_sums_left_alone
// CHECK-NOT: acc(
// CHECK: return
func.func @bf16_sums_left_alone(%x: tensor<8x16xbf16>, %w: tensor<16x16xbf16>, %bias: tensor<16xbf16>, %x16: tensor<8x16xf16>, %w16: tensor<16x16xf16>) -> (tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xf16>) {
  %g1 = infir2.matmul %x, %w : tensor<8x16xbf16>, tensor<16x16xbf16> -> tensor<8x16xbf16>
  %a1 = infir2.add %g1, %bias : tensor<8x16xbf16>, tensor<16xbf16>
  %g2 = infir2.matmul %x, %w : tensor<8x16xbf16>, tensor<16x16xbf16> -> tensor<8x16xbf16>
  %a2 = infir2.add %g2, %g2 : tensor<8x16xbf16>, tensor<8x16xbf16>
  %g3 = infir2.matmul %x, %w : tensor<8x16xbf16>, tensor<16x16xbf16> -> tensor<8x16xbf16>
  %later = infir2.silu %x : tensor<8x16xbf16>
  %a3 = infir2.add %g3, %later : tensor<8x16xbf16>, tensor<8x16xbf16>
  %g4 = infir2.matmul %x16, %w16 : tensor<8x16xf16>, tensor<16x16xf16> -> tensor<8x16xf16>
  %a4 = infir2.add %x16, %g4 : tensor<8x16xf16>, tensor<8x16xf16>
  return %a1, %a2, %a3, %a4 : tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xf16>
}

// -----

// Tests the residual stream's gradient meeting a norm's input gradient: the
// norm's gradient adds it as it writes (with its weight gradient's
// accumulator kept), rounded once; the add is gone.
// CHECK-LABEL: func.func @norm_residual
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8x16xbf16>, %[[W:[^:]+]]: tensor<16xbf16>, %[[DY:[^:]+]]: tensor<4x8x16xbf16>, %[[G:[^:]+]]: tensor<4x8x16xbf16>, %[[ACC:[^:]+]]: tensor<16xf32>)
// CHECK-NEXT: %[[DX:.+]], %[[DW:.+]] = infir2.rms_norm_grad %[[X]], %[[W]], %[[DY]] residual(%[[G]] : tensor<4x8x16xbf16>) acc(%[[ACC]] : tensor<16xf32>) {epsilon = {{.+}}} : tensor<4x8x16xbf16>, tensor<16xbf16>
// CHECK-NEXT: return %[[DX]], %[[DW]]
func.func @norm_residual(%x: tensor<4x8x16xbf16>, %w: tensor<16xbf16>, %dy: tensor<4x8x16xbf16>, %g: tensor<4x8x16xbf16>, %acc: tensor<16xf32>) -> (tensor<4x8x16xbf16>, tensor<16xf32>) {
  %dx, %dw = infir2.rms_norm_grad %x, %w, %dy acc(%acc : tensor<16xf32>) {epsilon = 1.0e-06 : f64} : tensor<4x8x16xbf16>, tensor<16xbf16>
  %s = infir2.add %dx, %g : tensor<4x8x16xbf16>, tensor<4x8x16xbf16>
  return %s, %dw : tensor<4x8x16xbf16>, tensor<16xf32>
}

// -----

// Tests the norm gradients' sums left alone: a residual made after the
// norm's gradient, an input gradient read elsewhere too, and a broadcast.
// CHECK-LABEL: func.func @norm_residual_left_alone
// CHECK-NOT: residual(
// CHECK-COUNT-3: infir2.add
// CHECK-NOT: residual(
func.func @norm_residual_left_alone(%x: tensor<4x16xbf16>, %w: tensor<16xbf16>, %dy: tensor<4x16xbf16>, %b: tensor<16xbf16>) -> (tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>) {
  %dx, %dw = infir2.rms_norm_grad %x, %w, %dy {epsilon = 1.0e-06 : f64} : tensor<4x16xbf16>, tensor<16xbf16>
  %late = infir2.silu %dy : tensor<4x16xbf16>
  %s = infir2.add %late, %dx : tensor<4x16xbf16>, tensor<4x16xbf16>
  %dx2, %dw2 = infir2.rms_norm_grad %x, %w, %dy {epsilon = 1.0e-06 : f64} : tensor<4x16xbf16>, tensor<16xbf16>
  %s2 = infir2.add %dy, %dx2 : tensor<4x16xbf16>, tensor<4x16xbf16>
  %dx3, %dw3 = infir2.rms_norm_grad %x, %w, %dy {epsilon = 1.0e-06 : f64} : tensor<4x16xbf16>, tensor<16xbf16>
  %s3 = infir2.add %dx3, %b : tensor<4x16xbf16>, tensor<16xbf16>
  return %s, %s2, %dx2, %s3 : tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>
}

// -----

// Tests a gradient summed over a tensor-parallel group before its FP32
// accumulator (a norm weight's, under sequence parallelism): the norm's
// gradient is made into FP32 zeros, not into the accumulator (the group
// would sum it twice), and summed in FP32; nothing is rounded to BF16.
// CHECK-LABEL: func.func @reduce_in_fp32
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x16xbf16>, %[[W:[^:]+]]: tensor<16xbf16>, %[[DY:[^:]+]]: tensor<4x16xbf16>, %[[ACC:[^:]+]]: tensor<16xf32>)
// CHECK-NEXT: %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<16xf32>
// CHECK-NEXT: %[[DX:.+]], %[[DW:.+]] = infir2.rms_norm_grad %[[X]], %[[W]], %[[DY]] acc(%[[Z]] : tensor<16xf32>)
// CHECK-NEXT: %[[S:.+]] = infir2.tp_reduce %[[DW]] {size = 2 : i64} : tensor<16xf32>
// CHECK-NEXT: %[[NEW:.+]] = infir2.add %[[ACC]], %[[S]] : tensor<16xf32>, tensor<16xf32>
// CHECK-NEXT: return %[[DX]], %[[NEW]]
func.func @reduce_in_fp32(%x: tensor<4x16xbf16>, %w: tensor<16xbf16>, %dy: tensor<4x16xbf16>, %acc: tensor<16xf32>) -> (tensor<4x16xbf16>, tensor<16xf32>) {
  %dx, %dw = infir2.rms_norm_grad %x, %w, %dy {epsilon = 1.0e-06 : f64} : tensor<4x16xbf16>, tensor<16xbf16>
  %s = infir2.tp_reduce %dw {size = 2 : i64} : tensor<16xbf16>
  %c = infir2.convert %s : tensor<16xbf16> -> tensor<16xf32>
  %new = infir2.add %acc, %c : tensor<16xf32>, tensor<16xf32>
  return %dx, %new : tensor<4x16xbf16>, tensor<16xf32>
}
