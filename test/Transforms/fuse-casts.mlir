// RUN: infir2-opt %s --split-input-file --infir2-fuse-casts | FileCheck %s

// Tests that a GEMM of two K-last dequantized operands becomes a
// scaled_matmul of their FP8 data, the scales riding along, and the
// dequantizations go.
// CHECK-LABEL: func.func @dequantize_fires
// CHECK-SAME: (%[[A:[^:]+]]: tensor<128x256xf8E4M3FN>, %[[SA:[^:]+]]: tensor<128x2xf32>, %[[B:[^:]+]]: tensor<256x256xf8E4M3FN>, %[[SB:[^:]+]]: tensor<2x2xf32>)
// CHECK-NOT: fp8.dequantize
// CHECK: %[[Y:.+]] = fp8.scaled_matmul (%[[A]], %[[SA]] by #fp8.groups<128, dim = 1>), (%[[B]], %[[SB]] by #fp8.blocks<128, 128>) {infir2.gemm_role = "dgrad"}
// CHECK-SAME: -> tensor<128x256xbf16>
// CHECK-NOT: infir2.matmul
// CHECK: return %[[Y]]
func.func @dequantize_fires(%a: tensor<128x256xf8E4M3FN>, %sa: tensor<128x2xf32>, %b: tensor<256x256xf8E4M3FN>, %sb: tensor<2x2xf32>) -> tensor<128x256xbf16> {
  %x = fp8.dequantize (%a, %sa by #fp8.groups<128, dim = 1>) : (tensor<128x256xf8E4M3FN>, tensor<128x2xf32>) -> tensor<128x256xbf16>
  %w = fp8.dequantize (%b, %sb by #fp8.blocks<128, 128>) : (tensor<256x256xf8E4M3FN>, tensor<2x2xf32>) -> tensor<256x256xbf16>
  %y = infir2.matmul %x, %w {transpose_rhs, infir2.gemm_role = "dgrad"} : tensor<128x256xbf16>, tensor<256x256xbf16> -> tensor<128x256xbf16>
  return %y : tensor<128x256xbf16>
}

// -----

// Tests that the fold does not fire when an operand is not dequantized, or
// when an operand is stored K-first (scaled_matmul takes both K-last).
// CHECK-LABEL: func.func @dequantize_does_not_fire
// CHECK-COUNT-2: fp8.dequantize
// CHECK: infir2.matmul %{{.+}}, %{{.+}} {transpose_rhs}
// CHECK: infir2.matmul %{{.+}}, %{{.+}} :
// CHECK-NOT: fp8.scaled_matmul
func.func @dequantize_does_not_fire(%a: tensor<128x256xf8E4M3FN>, %sa: tensor<128x2xf32>, %b: tensor<256x256xf8E4M3FN>, %sb: tensor<2x2xf32>, %h: tensor<256x256xbf16>) -> (tensor<128x256xbf16>, tensor<128x256xbf16>) {
  %x = fp8.dequantize (%a, %sa by #fp8.groups<128, dim = 1>) : (tensor<128x256xf8E4M3FN>, tensor<128x2xf32>) -> tensor<128x256xbf16>
  %w = fp8.dequantize (%b, %sb by #fp8.blocks<128, 128>) : (tensor<256x256xf8E4M3FN>, tensor<2x2xf32>) -> tensor<256x256xbf16>
  %y = infir2.matmul %x, %h {transpose_rhs} : tensor<128x256xbf16>, tensor<256x256xbf16> -> tensor<128x256xbf16>
  %z = infir2.matmul %x, %w : tensor<128x256xbf16>, tensor<256x256xbf16> -> tensor<128x256xbf16>
  return %y, %z : tensor<128x256xbf16>, tensor<128x256xbf16>
}

// -----

// Tests that a norm read only by its quantization becomes one fp8.fused op
// that yields the FP8 copies and not the normalized tensor.
// CHECK-LABEL: func.func @norm_fires
// CHECK: %[[F:.+]]:4 = fp8.fused -> (tensor<2x128x256xf8E4M3FN>, tensor<2x128x2xf32>, tensor<256x256xf8E4M3FN>, tensor<256x2xf32>) {
// CHECK-NEXT: %[[N:.+]] = infir2.rms_norm
// CHECK-NEXT: %[[Q:.+]], %[[S:.+]], %[[QT:.+]], %[[ST:.+]] = fp8.quantize_dual %[[N]]
// CHECK-NEXT: fp8.yield %[[Q]], %[[S]], %[[QT]], %[[ST]] :
// CHECK-NEXT: }
// CHECK: fp8.scaled_matmul (%[[F]]#0, %[[F]]#1 by
// CHECK: return %{{.+}}, %[[F]]#2
func.func @norm_fires(%x: tensor<2x128x256xbf16>, %g: tensor<256xbf16>, %wq: tensor<256x256xf8E4M3FN>, %ws: tensor<2x2xf32>) -> (tensor<2x128x256xbf16>, tensor<256x256xf8E4M3FN>) {
  %n = infir2.rms_norm %x, %g {epsilon = 1.0e-06 : f64} : tensor<2x128x256xbf16>, tensor<256xbf16>
  %q, %s, %qt, %st = fp8.quantize_dual %n to e4m3 by #fp8.groups<128, dim = 2> and transposed by #fp8.groups<128, dim = 1> scale pow2
      : tensor<2x128x256xbf16> -> tensor<2x128x256xf8E4M3FN>, tensor<2x128x2xf32>, tensor<256x256xf8E4M3FN>, tensor<256x2xf32>
  %y = fp8.scaled_matmul (%q, %s by #fp8.groups<128, dim = 2>), (%wq, %ws by #fp8.blocks<128, 128>)
      : (tensor<2x128x256xf8E4M3FN>, tensor<2x128x2xf32>), (tensor<256x256xf8E4M3FN>, tensor<2x2xf32>) -> tensor<2x128x256xbf16>
  return %y, %qt : tensor<2x128x256xbf16>, tensor<256x256xf8E4M3FN>
}

// -----

// Tests that a SwiGLU whose result something else reads too is still fused,
// and the fused op yields the high-precision result for that reader.
// CHECK-LABEL: func.func @swiglu_keeps_result
// CHECK: %[[F:.+]]:3 = fp8.fused -> (tensor<128x768xbf16>, tensor<128x768xf8E4M3FN>, tensor<128x6xf32>) {
// CHECK-NEXT: %[[H:.+]] = infir2.swiglu
// CHECK-NEXT: %[[Q:.+]], %[[S:.+]] = fp8.quantize %[[H]]
// CHECK-NEXT: fp8.yield %[[H]], %[[Q]], %[[S]] :
// CHECK: return %[[F]]#0, %[[F]]#1
func.func @swiglu_keeps_result(%g: tensor<128x768xbf16>, %u: tensor<128x768xbf16>) -> (tensor<128x768xbf16>, tensor<128x768xf8E4M3FN>) {
  %h = infir2.swiglu %g, %u : tensor<128x768xbf16>
  %q, %s = fp8.quantize %h to e4m3 by #fp8.groups<128, dim = 1> scale pow2 : tensor<128x768xbf16> -> tensor<128x768xf8E4M3FN>, tensor<128x6xf32>
  return %h, %q : tensor<128x768xbf16>, tensor<128x768xf8E4M3FN>
}

// -----

// Tests that a norm nothing quantizes (the final norm before a high-precision
// LM head) is left alone.
// CHECK-LABEL: func.func @norm_does_not_fire
// CHECK-NOT: fp8.fused
// CHECK: infir2.rms_norm
func.func @norm_does_not_fire(%x: tensor<128x256xbf16>, %g: tensor<256xbf16>, %head: tensor<512x256xbf16>) -> tensor<128x512xbf16> {
  %n = infir2.rms_norm %x, %g {epsilon = 1.0e-06 : f64} : tensor<128x256xbf16>, tensor<256xbf16>
  %y = infir2.matmul %n, %head {transpose_rhs} : tensor<128x256xbf16>, tensor<512x256xbf16> -> tensor<128x512xbf16>
  return %y : tensor<128x512xbf16>
}

// -----

// Tests FP8 output: a GEMM read only by the quantization feeding the next FP8
// GEMM is fused with it, and its high-precision product is not yielded.
// CHECK-LABEL: func.func @gemm_fires
// CHECK: %[[F:.+]]:2 = fp8.fused -> (tensor<128x256xf8E4M3FN>, tensor<128x2xf32>) {
// CHECK-NEXT: %[[Y:.+]] = fp8.scaled_matmul
// CHECK-NEXT: %[[Q:.+]], %[[S:.+]] = fp8.quantize %[[Y]]
// CHECK-NEXT: fp8.yield %[[Q]], %[[S]] :
// CHECK: %[[Z:.+]] = fp8.scaled_matmul (%[[F]]#0, %[[F]]#1 by
// CHECK-NOT: fp8.fused
// CHECK: return %[[Z]]
func.func @gemm_fires(%xq: tensor<128x256xf8E4M3FN>, %xs: tensor<128x2xf32>, %wq: tensor<256x256xf8E4M3FN>, %ws: tensor<2x2xf32>) -> tensor<128x256xbf16> {
  %y = fp8.scaled_matmul (%xq, %xs by #fp8.groups<128, dim = 1>), (%wq, %ws by #fp8.blocks<128, 128>)
      : (tensor<128x256xf8E4M3FN>, tensor<128x2xf32>), (tensor<256x256xf8E4M3FN>, tensor<2x2xf32>) -> tensor<128x256xbf16>
  %q, %s = fp8.quantize %y to e4m3 by #fp8.groups<128, dim = 1> scale pow2 : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<128x2xf32>
  %z = fp8.scaled_matmul (%q, %s by #fp8.groups<128, dim = 1>), (%wq, %ws by #fp8.blocks<128, 128>)
      : (tensor<128x256xf8E4M3FN>, tensor<128x2xf32>), (tensor<256x256xf8E4M3FN>, tensor<2x2xf32>) -> tensor<128x256xbf16>
  return %z : tensor<128x256xbf16>
}

// -----

// Tests that a GEMM whose product anything else reads (a residual add) keeps
// writing it in high precision: no FP8 output.
// CHECK-LABEL: func.func @gemm_does_not_fire
// CHECK-NOT: fp8.fused
// CHECK: %[[Y:.+]] = fp8.scaled_matmul
// CHECK: fp8.quantize %[[Y]]
// CHECK: infir2.add %[[Y]]
func.func @gemm_does_not_fire(%xq: tensor<128x256xf8E4M3FN>, %xs: tensor<128x2xf32>, %wq: tensor<256x256xf8E4M3FN>, %ws: tensor<2x2xf32>, %r: tensor<128x256xbf16>) -> (tensor<128x256xf8E4M3FN>, tensor<128x256xbf16>) {
  %y = fp8.scaled_matmul (%xq, %xs by #fp8.groups<128, dim = 1>), (%wq, %ws by #fp8.blocks<128, 128>)
      : (tensor<128x256xf8E4M3FN>, tensor<128x2xf32>), (tensor<256x256xf8E4M3FN>, tensor<2x2xf32>) -> tensor<128x256xbf16>
  %q, %s = fp8.quantize %y to e4m3 by #fp8.groups<128, dim = 1> scale pow2 : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<128x2xf32>
  %sum = infir2.add %y, %r : tensor<128x256xbf16>, tensor<128x256xbf16>
  return %q, %sum : tensor<128x256xf8E4M3FN>, tensor<128x256xbf16>
}
