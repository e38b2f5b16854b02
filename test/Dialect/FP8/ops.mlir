// RUN: infir2-opt %s --split-input-file | FileCheck %s
// RUN: infir2-opt %s --split-input-file --mlir-print-op-generic | infir2-opt --split-input-file | FileCheck %s

// Tests the InfiR2 recipe's forward GEMM: 1x128 activation groups along K,
// 128x128 weight blocks, FP32 accumulation, BF16 out.
// CHECK-LABEL: func.func @fprop
// CHECK-SAME: (%[[X:.+]]: tensor<256x512xbf16>, %[[W:.+]]: tensor<1024x512xbf16>)
// CHECK: %[[XQ:.+]], %[[XS:.+]] = fp8.quantize %[[X]] to e4m3 by #fp8.groups<128, dim = 1> scale pow2 : tensor<256x512xbf16> -> tensor<256x512xf8E4M3FN>, tensor<256x4xf32>
// CHECK: %[[WQ:.+]], %[[WS:.+]] = fp8.quantize %[[W]] to e4m3 by #fp8.blocks<128, 128> scale pow2 : tensor<1024x512xbf16> -> tensor<1024x512xf8E4M3FN>, tensor<8x4xf32>
// CHECK: fp8.scaled_matmul (%[[XQ]], %[[XS]] by #fp8.groups<128, dim = 1>), (%[[WQ]], %[[WS]] by #fp8.blocks<128, 128>) : (tensor<256x512xf8E4M3FN>, tensor<256x4xf32>), (tensor<1024x512xf8E4M3FN>, tensor<8x4xf32>) -> tensor<256x1024xbf16>
func.func @fprop(%x: tensor<256x512xbf16>, %w: tensor<1024x512xbf16>) -> tensor<256x1024xbf16> {
  %xq, %xs = fp8.quantize %x to e4m3 by #fp8.groups<128, dim = 1> scale pow2
      : tensor<256x512xbf16> -> tensor<256x512xf8E4M3FN>, tensor<256x4xf32>
  %wq, %ws = fp8.quantize %w to e4m3 by #fp8.blocks<128, 128> scale pow2
      : tensor<1024x512xbf16> -> tensor<1024x512xf8E4M3FN>, tensor<8x4xf32>
  %y = fp8.scaled_matmul (%xq, %xs by #fp8.groups<128, dim = 1>), (%wq, %ws by #fp8.blocks<128, 128>)
      : (tensor<256x512xf8E4M3FN>, tensor<256x4xf32>), (tensor<1024x512xf8E4M3FN>, tensor<8x4xf32>) -> tensor<256x1024xbf16>
  return %y : tensor<256x1024xbf16>
}

// -----

// Tests the hybrid format's E5M2 gradients, a weight-gradient GEMM over
// tokens (both operands grouped along their token-contiguous last dimension)
// with an FP32 result, and E8M0 scales.
// CHECK-LABEL: func.func @wgrad_hybrid
// CHECK: fp8.quantize %{{.+}} to e5m2 by #fp8.groups<128, dim = 1> scale pow2 : tensor<1024x256xf32> -> tensor<1024x256xf8E5M2>, tensor<1024x2xf8E8M0FNU>
// CHECK: fp8.scaled_matmul (%{{.+}}, %{{.+}} by #fp8.groups<128, dim = 1>), (%{{.+}}, %{{.+}} by #fp8.groups<128, dim = 1>) : (tensor<1024x256xf8E5M2>, tensor<1024x2xf8E8M0FNU>), (tensor<512x256xf8E4M3FN>, tensor<512x2xf32>) -> tensor<1024x512xf32>
func.func @wgrad_hybrid(%dyT: tensor<1024x256xf32>, %xq: tensor<512x256xf8E4M3FN>, %xs: tensor<512x2xf32>) -> tensor<1024x512xf32> {
  %gq, %gs = fp8.quantize %dyT to e5m2 by #fp8.groups<128, dim = 1> scale pow2
      : tensor<1024x256xf32> -> tensor<1024x256xf8E5M2>, tensor<1024x2xf8E8M0FNU>
  %dw = fp8.scaled_matmul (%gq, %gs by #fp8.groups<128, dim = 1>), (%xq, %xs by #fp8.groups<128, dim = 1>)
      : (tensor<1024x256xf8E5M2>, tensor<1024x2xf8E8M0FNU>), (tensor<512x256xf8E4M3FN>, tensor<512x2xf32>) -> tensor<1024x512xf32>
  return %dw : tensor<1024x512xf32>
}

// -----

// Tests a weight gradient added to its FP32 accumulator by the GEMM.
// CHECK-LABEL: func.func @wgrad_acc
// CHECK-SAME: %[[ACC:[^:]+]]: tensor<1024x512xf32>
// CHECK: fp8.scaled_matmul (%{{.+}}, %{{.+}} by #fp8.groups<128, dim = 1>), (%{{.+}}, %{{.+}} by #fp8.groups<128, dim = 1>) acc(%[[ACC]] : tensor<1024x512xf32>) : (tensor<1024x256xf8E4M3FN>, tensor<1024x2xf32>), (tensor<512x256xf8E4M3FN>, tensor<512x2xf32>) -> tensor<1024x512xf32>
func.func @wgrad_acc(%gq: tensor<1024x256xf8E4M3FN>, %gs: tensor<1024x2xf32>, %xq: tensor<512x256xf8E4M3FN>, %xs: tensor<512x2xf32>, %acc: tensor<1024x512xf32>) -> tensor<1024x512xf32> {
  %dw = fp8.scaled_matmul (%gq, %gs by #fp8.groups<128, dim = 1>), (%xq, %xs by #fp8.groups<128, dim = 1>) acc(%acc : tensor<1024x512xf32>)
      : (tensor<1024x256xf8E4M3FN>, tensor<1024x2xf32>), (tensor<512x256xf8E4M3FN>, tensor<512x2xf32>) -> tensor<1024x512xf32>
  return %dw : tensor<1024x512xf32>
}

// -----

// Tests per-tensor scaling with plain FP32 scales, dequantize and amax, and
// column-wise groups.
// CHECK-LABEL: func.func @tensorwise
// CHECK: %[[Q:.+]], %[[S:.+]] = fp8.quantize %{{.+}} to e4m3 by #fp8.tensorwise scale fp32 : tensor<64x256xf16> -> tensor<64x256xf8E4M3FN>, tensor<1x1xf32>
// CHECK: fp8.dequantize (%[[Q]], %[[S]] by #fp8.tensorwise) : (tensor<64x256xf8E4M3FN>, tensor<1x1xf32>) -> tensor<64x256xbf16>
// CHECK: fp8.amax (%{{.+}} by #fp8.tensorwise) : tensor<64x256xf16> -> tensor<1x1xf32>
// CHECK: fp8.amax (%{{.+}} by #fp8.groups<32, dim = 0>) : tensor<64x256xf16> -> tensor<2x256xf32>
func.func @tensorwise(%x: tensor<64x256xf16>) {
  %q, %s = fp8.quantize %x to e4m3 by #fp8.tensorwise scale fp32
      : tensor<64x256xf16> -> tensor<64x256xf8E4M3FN>, tensor<1x1xf32>
  %d = fp8.dequantize (%q, %s by #fp8.tensorwise) : (tensor<64x256xf8E4M3FN>, tensor<1x1xf32>) -> tensor<64x256xbf16>
  %a = fp8.amax (%x by #fp8.tensorwise) : tensor<64x256xf16> -> tensor<1x1xf32>
  %c = fp8.amax (%x by #fp8.groups<32, dim = 0>) : tensor<64x256xf16> -> tensor<2x256xf32>
  return
}

// -----

// Tests a batched scaled GEMM: a rank-3 lhs with a shared rank-2 rhs, and
// blocks over the last two dimensions of a rank-3 operand.
// CHECK-LABEL: func.func @batched
// CHECK: fp8.scaled_matmul (%{{.+}}, %{{.+}} by #fp8.groups<128, dim = 2>), (%{{.+}}, %{{.+}} by #fp8.blocks<128, 128>) : (tensor<2x64x256xf8E4M3FN>, tensor<2x64x2xf32>), (tensor<384x256xf8E4M3FN>, tensor<3x2xf32>) -> tensor<2x64x384xbf16>
// CHECK: fp8.scaled_matmul (%{{.+}}, %{{.+}} by #fp8.groups<128, dim = 2>), (%{{.+}}, %{{.+}} by #fp8.blocks<64, 128>) : (tensor<2x64x256xf8E4M3FN>, tensor<2x64x2xf32>), (tensor<2x128x256xf8E4M3FN>, tensor<2x2x2xf32>) -> tensor<2x64x128xf32>
func.func @batched(%a: tensor<2x64x256xf8E4M3FN>, %as: tensor<2x64x2xf32>,
                   %w: tensor<384x256xf8E4M3FN>, %ws: tensor<3x2xf32>,
                   %b: tensor<2x128x256xf8E4M3FN>, %bs: tensor<2x2x2xf32>) {
  %0 = fp8.scaled_matmul (%a, %as by #fp8.groups<128, dim = 2>), (%w, %ws by #fp8.blocks<128, 128>)
      : (tensor<2x64x256xf8E4M3FN>, tensor<2x64x2xf32>), (tensor<384x256xf8E4M3FN>, tensor<3x2xf32>) -> tensor<2x64x384xbf16>
  %1 = fp8.scaled_matmul (%a, %as by #fp8.groups<128, dim = 2>), (%b, %bs by #fp8.blocks<64, 128>)
      : (tensor<2x64x256xf8E4M3FN>, tensor<2x64x2xf32>), (tensor<2x128x256xf8E4M3FN>, tensor<2x2x2xf32>) -> tensor<2x64x128xf32>
  return
}

// -----

// Tests that the fp8 ops work on tensors produced by other dialects.
// CHECK-LABEL: func.func @other_dialects
// CHECK: %[[E:.+]] = tensor.empty() : tensor<128x128xbf16>
// CHECK: fp8.quantize %[[E]] to e4m3 by #fp8.blocks<128, 128> scale pow2
func.func @other_dialects() {
  %e = tensor.empty() : tensor<128x128xbf16>
  %q, %s = fp8.quantize %e to e4m3 by #fp8.blocks<128, 128> scale pow2
      : tensor<128x128xbf16> -> tensor<128x128xf8E4M3FN>, tensor<1x1xf32>
  return
}

// -----

// Tests that the attributes print in their own right, as the precision
// decisions of later passes will carry them.
// CHECK-LABEL: func.func @attributes
// CHECK-SAME: fmt = #fp8<format e5m2>
// CHECK-SAME: gran = #fp8.groups<128, dim = 0>
// CHECK-SAME: rule = #fp8<scale_rule fp32>
func.func @attributes() attributes {fmt = #fp8<format e5m2>, gran = #fp8.groups<128, dim = 0>, rule = #fp8<scale_rule fp32>} {
  return
}

// -----

// Tests quantize_dual: the row-wise copy of a [batch, seq, hidden] activation
// and the [hidden, tokens] column-wise copy, with their scales.
// CHECK-LABEL: func.func @dual
// CHECK: %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} = fp8.quantize_dual %{{.+}} to e4m3 by #fp8.groups<128, dim = 2> and transposed by #fp8.groups<128, dim = 1> scale pow2 : tensor<2x128x512xbf16> -> tensor<2x128x512xf8E4M3FN>, tensor<2x128x4xf32>, tensor<512x256xf8E4M3FN>, tensor<512x2xf32>
func.func @dual(%x: tensor<2x128x512xbf16>) {
  %q, %s, %qt, %st = fp8.quantize_dual %x to e4m3 by #fp8.groups<128, dim = 2>
      and transposed by #fp8.groups<128, dim = 1> scale pow2
      : tensor<2x128x512xbf16> -> tensor<2x128x512xf8E4M3FN>, tensor<2x128x4xf32>,
        tensor<512x256xf8E4M3FN>, tensor<512x2xf32>
  return
}

// -----

// Tests fp8.fused: a producer from another dialect, its quantization, and a
// yield of the FP8 copy and of the high-precision value.
// CHECK-LABEL: func.func @fused
// CHECK: %[[F:.+]]:3 = fp8.fused -> (tensor<128x256xbf16>, tensor<128x256xf8E4M3FN>, tensor<128x2xf32>) {
// CHECK-NEXT: %[[N:.+]] = infir2.silu
// CHECK-NEXT: %[[Q:.+]], %[[S:.+]] = fp8.quantize %[[N]]
// CHECK-NEXT: fp8.yield %[[N]], %[[Q]], %[[S]] : tensor<128x256xbf16>, tensor<128x256xf8E4M3FN>, tensor<128x2xf32>
// CHECK-NEXT: }
// CHECK: return %[[F]]#0, %[[F]]#1
func.func @fused(%x: tensor<128x256xbf16>) -> (tensor<128x256xbf16>, tensor<128x256xf8E4M3FN>) {
  %y, %q, %s = fp8.fused -> (tensor<128x256xbf16>, tensor<128x256xf8E4M3FN>, tensor<128x2xf32>) {
    %n = infir2.silu %x : tensor<128x256xbf16>
    %a, %b = fp8.quantize %n to e4m3 by #fp8.groups<128, dim = 1> scale pow2
        : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<128x2xf32>
    fp8.yield %n, %a, %b : tensor<128x256xbf16>, tensor<128x256xf8E4M3FN>, tensor<128x2xf32>
  }
  return %y, %q : tensor<128x256xbf16>, tensor<128x256xf8E4M3FN>
}

// -----

// Tests MXFP8 (OCP MX): every operand in 1x32 blocks along K with E8M0
// scales, a column-wise copy whose blocks run along the tokens, and the
// specification's floor scale rule.
// CHECK-LABEL: func.func @mxfp8
// CHECK: fp8.quantize_dual %{{.+}} to e4m3 by #fp8.mx<dim = 1> and transposed by #fp8.mx<dim = 1> scale pow2 : tensor<64x256xbf16> -> tensor<64x256xf8E4M3FN>, tensor<64x8xf8E8M0FNU>, tensor<256x64xf8E4M3FN>, tensor<256x2xf8E8M0FNU>
// CHECK: fp8.quantize %{{.+}} to e4m3 by #fp8.mx<dim = 1> scale floor : tensor<96x256xbf16> -> tensor<96x256xf8E4M3FN>, tensor<96x8xf8E8M0FNU>
// CHECK: fp8.scaled_matmul (%{{.+}}, %{{.+}} by #fp8.mx<dim = 1>), (%{{.+}}, %{{.+}} by #fp8.mx<dim = 1>) : (tensor<64x256xf8E4M3FN>, tensor<64x8xf8E8M0FNU>), (tensor<96x256xf8E4M3FN>, tensor<96x8xf8E8M0FNU>) -> tensor<64x96xbf16>
func.func @mxfp8(%x: tensor<64x256xbf16>, %w: tensor<96x256xbf16>) -> tensor<64x96xbf16> {
  %xq, %xs, %xqt, %xst = fp8.quantize_dual %x to e4m3 by #fp8.mx<dim = 1> and transposed by #fp8.mx<dim = 1> scale pow2
      : tensor<64x256xbf16> -> tensor<64x256xf8E4M3FN>, tensor<64x8xf8E8M0FNU>, tensor<256x64xf8E4M3FN>, tensor<256x2xf8E8M0FNU>
  %wq, %ws = fp8.quantize %w to e4m3 by #fp8.mx<dim = 1> scale floor
      : tensor<96x256xbf16> -> tensor<96x256xf8E4M3FN>, tensor<96x8xf8E8M0FNU>
  %y = fp8.scaled_matmul (%xq, %xs by #fp8.mx<dim = 1>), (%wq, %ws by #fp8.mx<dim = 1>)
      : (tensor<64x256xf8E4M3FN>, tensor<64x8xf8E8M0FNU>), (tensor<96x256xf8E4M3FN>, tensor<96x8xf8E8M0FNU>) -> tensor<64x96xbf16>
  return %y : tensor<64x96xbf16>
}
