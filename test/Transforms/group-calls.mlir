// RUN: infir2-opt %s --split-input-file --infir2-group-calls | FileCheck %s

// Tests a layer's q, k and v gradients as autodiff leaves them, each bias
// sum and quantization followed by that gradient's GEMMs: the later sums
// and quantizations move up to just after the first of their kind (their
// operands are made before it), in their order; the GEMMs stay.
// CHECK-LABEL: func.func @qkv
// CHECK: infir2.reduce_sum %[[DV:[^ ]+]] acc(%{{[^ ]+}} : tensor<16xf32>)
// CHECK-NEXT: infir2.reduce_sum %[[DK:[^ ]+]] acc(
// CHECK-NEXT: infir2.reduce_sum %[[DQ:[^ ]+]] acc(
// CHECK-NEXT: fp8.quantize_dual %[[DV]]
// CHECK-NEXT: fp8.quantize_dual %[[DK]]
// CHECK-NEXT: fp8.quantize_dual %[[DQ]]
// CHECK-NEXT: infir2.silu %[[DV]]
// CHECK-NEXT: infir2.silu %[[DK]]
// CHECK-NEXT: infir2.silu %[[DQ]]
// CHECK-NEXT: return
func.func @qkv(%dq: tensor<4x16xbf16>, %dk: tensor<4x16xbf16>, %dv: tensor<4x16xbf16>, %a: tensor<16xf32>, %b: tensor<16xf32>, %c: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<4x16xf8E4M3FN>, tensor<4x16xf8E4M3FN>, tensor<4x16xf8E4M3FN>, tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>) {
  %sv = infir2.reduce_sum %dv acc(%a : tensor<16xf32>) : tensor<4x16xbf16> -> tensor<16xf32>
  %v:4 = fp8.quantize_dual %dv to e4m3 by #fp8.groups<16, dim = 1> and transposed by #fp8.groups<4, dim = 1> scale pow2 : tensor<4x16xbf16> -> tensor<4x16xf8E4M3FN>, tensor<4x1xf32>, tensor<16x4xf8E4M3FN>, tensor<16x1xf32>
  %gv = infir2.silu %dv : tensor<4x16xbf16>
  %sk = infir2.reduce_sum %dk acc(%b : tensor<16xf32>) : tensor<4x16xbf16> -> tensor<16xf32>
  %k:4 = fp8.quantize_dual %dk to e4m3 by #fp8.groups<16, dim = 1> and transposed by #fp8.groups<4, dim = 1> scale pow2 : tensor<4x16xbf16> -> tensor<4x16xf8E4M3FN>, tensor<4x1xf32>, tensor<16x4xf8E4M3FN>, tensor<16x1xf32>
  %gk = infir2.silu %dk : tensor<4x16xbf16>
  %sq = infir2.reduce_sum %dq acc(%c : tensor<16xf32>) : tensor<4x16xbf16> -> tensor<16xf32>
  %q:4 = fp8.quantize_dual %dq to e4m3 by #fp8.groups<16, dim = 1> and transposed by #fp8.groups<4, dim = 1> scale pow2 : tensor<4x16xbf16> -> tensor<4x16xf8E4M3FN>, tensor<4x1xf32>, tensor<16x4xf8E4M3FN>, tensor<16x1xf32>
  %gq = infir2.silu %dq : tensor<4x16xbf16>
  return %sv, %sk, %sq, %v#0, %k#0, %q#0, %gv, %gk, %gq : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<4x16xf8E4M3FN>, tensor<4x16xf8E4M3FN>, tensor<4x16xf8E4M3FN>, tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>
}

// -----

// Tests what stays: a quantization of a value made after the previous one
// (it starts the next group, which a later one then joins), one of another
// format, and a sum without an accumulator after one with.
// CHECK-LABEL: func.func @left_alone
// CHECK: fp8.quantize_dual %[[X:[^ ]+]] to e4m3
// CHECK-NEXT: %[[Y:.+]] = infir2.silu %[[X]]
// CHECK-NEXT: fp8.quantize_dual %[[Y]] to e4m3
// CHECK-NEXT: fp8.quantize_dual %[[X]] to e4m3
// CHECK-NEXT: infir2.silu %[[Y]]
// CHECK-NEXT: fp8.quantize_dual %[[X]] to e5m2
// CHECK-NEXT: infir2.reduce_sum %[[X]] acc(
// CHECK-NEXT: %[[Z:.+]] = infir2.silu
// CHECK-NEXT: infir2.reduce_sum %[[Z]] :
func.func @left_alone(%x: tensor<4x16xbf16>, %a: tensor<16xf32>) -> (tensor<4x16xf8E4M3FN>, tensor<4x16xf8E4M3FN>, tensor<4x16xf8E4M3FN>, tensor<4x16xf8E5M2>, tensor<16xf32>, tensor<16xbf16>, tensor<4x16xbf16>) {
  %p:4 = fp8.quantize_dual %x to e4m3 by #fp8.groups<16, dim = 1> and transposed by #fp8.groups<4, dim = 1> scale pow2 : tensor<4x16xbf16> -> tensor<4x16xf8E4M3FN>, tensor<4x1xf32>, tensor<16x4xf8E4M3FN>, tensor<16x1xf32>
  %y = infir2.silu %x : tensor<4x16xbf16>
  %q:4 = fp8.quantize_dual %y to e4m3 by #fp8.groups<16, dim = 1> and transposed by #fp8.groups<4, dim = 1> scale pow2 : tensor<4x16xbf16> -> tensor<4x16xf8E4M3FN>, tensor<4x1xf32>, tensor<16x4xf8E4M3FN>, tensor<16x1xf32>
  %w = infir2.silu %y : tensor<4x16xbf16>
  %r:4 = fp8.quantize_dual %x to e4m3 by #fp8.groups<16, dim = 1> and transposed by #fp8.groups<4, dim = 1> scale pow2 : tensor<4x16xbf16> -> tensor<4x16xf8E4M3FN>, tensor<4x1xf32>, tensor<16x4xf8E4M3FN>, tensor<16x1xf32>
  %e:4 = fp8.quantize_dual %x to e5m2 by #fp8.groups<16, dim = 1> and transposed by #fp8.groups<4, dim = 1> scale pow2 : tensor<4x16xbf16> -> tensor<4x16xf8E5M2>, tensor<4x1xf32>, tensor<16x4xf8E5M2>, tensor<16x1xf32>
  %s = infir2.reduce_sum %x acc(%a : tensor<16xf32>) : tensor<4x16xbf16> -> tensor<16xf32>
  %z = infir2.silu %w : tensor<4x16xbf16>
  %t = infir2.reduce_sum %z : tensor<4x16xbf16> -> tensor<16xbf16>
  return %p#0, %q#0, %r#0, %e#0, %s, %t, %z : tensor<4x16xf8E4M3FN>, tensor<4x16xf8E4M3FN>, tensor<4x16xf8E4M3FN>, tensor<4x16xf8E5M2>, tensor<16xf32>, tensor<16xbf16>, tensor<4x16xbf16>
}
