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
