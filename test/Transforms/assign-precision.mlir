// RUN: infir2-opt %s --split-input-file --infir2-assign-precision | FileCheck %s
// RUN: infir2-opt %s --split-input-file --infir2-assign-precision="granularity=tensorwise scales=fp32" | FileCheck %s --check-prefix=TENSOR
// RUN: infir2-opt %s --split-input-file --infir2-assign-precision="granularity=rowwise" | FileCheck %s --check-prefix=ROW
// RUN: infir2-opt %s --split-input-file --infir2-assign-precision="granularity=mxfp8" | FileCheck %s --check-prefix=MX
// RUN: not infir2-opt %s --split-input-file --infir2-assign-precision="granularity=mxfp8 scales=fp32" 2>&1 | FileCheck %s --check-prefix=MX-FP32
// RUN: infir2-opt %s --split-input-file --infir2-assign-precision="granularity=mxfp8 scales=floor" | FileCheck %s --check-prefix=MX-FLOOR
// MX-FP32: error: granularity=mxfp8 takes power-of-two scales (E8M0, as the MX format stores them): scales=fp32 does not apply; take pow2 (rounded up, the default) or floor (the specification's rule)

// Tests the InfiR2 recipe on a linear layer: activations in 1x128 groups
// along K (the last dimension of x), the weight in 128x128 blocks, E4M3,
// power-of-two scales; and the LM head, which stays in high precision.
// CHECK-LABEL: func.func @forward
// CHECK: infir2.matmul %{{.+}}, %{{.+}} {fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.groups<128, dim = 2>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "linear layer model.layers.0.mlp.up_proj.weight">, transpose_rhs}
// CHECK: infir2.matmul %{{.+}}, %{{.+}} {fp8.decision = #fp8.decision<precision = high, role = fprop, reason = "the LM head stays in high precision">, transpose_rhs}
// TENSOR-LABEL: func.func @forward
// TENSOR: lhs = #fp8.tensorwise, rhs = #fp8.tensorwise, lhs_format = e4m3, rhs_format = e4m3, scales = fp32
// ROW-LABEL: func.func @forward
// ROW: lhs = #fp8.groups<256, dim = 2>, rhs = #fp8.groups<256, dim = 1>
// MXFP8: every operand, the weight too, in 1x32 blocks along its K.
// MX-LABEL: func.func @forward
// MX: lhs = #fp8.mx<dim = 2>, rhs = #fp8.mx<dim = 1>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2
// MX: precision = high, role = fprop, reason = "the LM head stays in high precision"
// MX-FLOOR-LABEL: func.func @forward
// MX-FLOOR: lhs = #fp8.mx<dim = 2>, rhs = #fp8.mx<dim = 1>, lhs_format = e4m3, rhs_format = e4m3, scales = floor
func.func @forward(%w: tensor<512x256xbf16> {infir2.param = #infir2.param<"model.layers.0.mlp.up_proj.weight", normal(std = 0.02)>},
                   %head: tensor<384x512xbf16> {infir2.param = #infir2.param<"lm_head.weight", normal(std = 0.02)>},
                   %x: tensor<2x128x256xbf16>, %t: tensor<2x128xi32>) -> tensor<f32> {
  %h = infir2.matmul %x, %w {transpose_rhs} : tensor<2x128x256xbf16>, tensor<512x256xbf16> -> tensor<2x128x512xbf16>
  %logits = infir2.matmul %h, %head {transpose_rhs} : tensor<2x128x512xbf16>, tensor<384x512xbf16> -> tensor<2x128x384xf32>
  %l = infir2.cross_entropy %logits, %t : tensor<2x128x384xf32>, tensor<2x128xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that a GEMM the blocks cannot tile stays in high precision with the
// reason (N = 96), and that a GEMM too small to gain does too.
// CHECK-LABEL: func.func @untileable
// CHECK: {fp8.decision = #fp8.decision<precision = high, role = fprop, reason = "N = 96 is not a multiple of the blockwise block (128)">, transpose_rhs}
// CHECK: {fp8.decision = #fp8.decision<precision = high, role = fprop, reason = "4.19e+06 flops is below min-gemm-flops (1.60e+07): too small to gain">, transpose_rhs}
// N = 96 is three MX blocks: only the flops keep it high; N = 80 is not.
// MX-LABEL: func.func @untileable
// MX: reason = "6.29e+06 flops is below min-gemm-flops (1.60e+07): too small to gain"
// MX-LABEL: func.func @untileable_mx
// MX: reason = "N = 80 is not a multiple of the mxfp8 block (32)"
func.func @untileable(%w: tensor<96x256xbf16> {infir2.param = #infir2.param<"a.weight", normal(std = 0.02)>},
                      %v: tensor<128x128xbf16> {infir2.param = #infir2.param<"b.weight", normal(std = 0.02)>},
                      %x: tensor<128x256xbf16>, %y: tensor<128x128xbf16>) {
  %0 = infir2.matmul %x, %w {transpose_rhs} : tensor<128x256xbf16>, tensor<96x256xbf16> -> tensor<128x96xbf16>
  %1 = infir2.matmul %y, %v {transpose_rhs} : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xbf16>
  return
}

func.func @untileable_mx(%w: tensor<80x1024xbf16> {infir2.param = #infir2.param<"c.weight", normal(std = 0.02)>},
                         %x: tensor<256x1024xbf16>) {
  %0 = infir2.matmul %x, %w {transpose_rhs} : tensor<256x1024xbf16>, tensor<80x1024xbf16> -> tensor<256x80xbf16>
  return
}

// -----

// Tests the backward GEMMs autodiff tags: dgrad (dY in 1x128 groups along N,
// the weight in 128x128 blocks, used K-first) and wgrad (both operands in
// 1x128 groups along tokens, the first dimension of each flattened operand).
// CHECK-LABEL: func.func @backward
// CHECK: infir2.matmul %[[DY:.+]], %{{.+}} {fp8.decision = #fp8.decision<precision = fp8, role = dgrad, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "linear layer w">, infir2.gemm_grad_operand = 0 : i64, infir2.gemm_role = "dgrad", infir2.gemm_weight = "w"}
// CHECK: infir2.matmul %{{.+}}, %{{.+}} {fp8.decision = #fp8.decision<precision = fp8, role = wgrad, lhs = #fp8.groups<128, dim = 0>, rhs = #fp8.groups<128, dim = 0>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "linear layer w">, infir2.gemm_grad_operand = 0 : i64, infir2.gemm_role = "wgrad", infir2.gemm_weight = "w", transpose_lhs}
// MXFP8's dgrad takes the weight in blocks along N, not its fprop's K.
// MX-LABEL: func.func @backward
// MX: role = dgrad, lhs = #fp8.mx<dim = 1>, rhs = #fp8.mx<dim = 0>
// MX: role = wgrad, lhs = #fp8.mx<dim = 0>, rhs = #fp8.mx<dim = 0>
func.func @backward(%w: tensor<256x512xbf16> {infir2.param = #infir2.param<"w", normal(std = 0.02)>},
                    %dy: tensor<256x256xbf16>, %x: tensor<256x512xbf16>) {
  %dx = infir2.matmul %dy, %w {infir2.gemm_role = "dgrad", infir2.gemm_weight = "w", infir2.gemm_grad_operand = 0 : i64}
      : tensor<256x256xbf16>, tensor<256x512xbf16> -> tensor<256x512xbf16>
  %dw = infir2.matmul %dy, %x {infir2.gemm_role = "wgrad", infir2.gemm_weight = "w", infir2.gemm_grad_operand = 0 : i64, transpose_lhs}
      : tensor<256x256xbf16>, tensor<256x512xbf16> -> tensor<256x512xbf16>
  return
}

// -----

// Tests that linalg GEMMs take part through the external models, and that a
// linalg.matmul with user-defined indexing maps is left alone with a reason.
// CHECK-LABEL: func.func @linalg
// CHECK: linalg.matmul {fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "a GEMM the policy allows in FP8">}
// CHECK: linalg.batch_matmul {fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.groups<128, dim = 2>, rhs = #fp8.blocks<128, 128>
// CHECK: linalg.matmul indexing_maps = [{{.*}}] {fp8.decision = #fp8.decision<precision = high, role = fprop, reason = "a GEMM form the recipe does not handle (operand layout or buffers)">}
func.func @linalg(%a: tensor<256x512xf32>, %b: tensor<512x384xf32>, %c: tensor<256x384xf32>,
                  %ba: tensor<2x128x256xf32>, %bb: tensor<2x256x128xf32>, %bc: tensor<2x128x128xf32>,
                  %bt: tensor<384x512xf32>) {
  %0 = linalg.matmul ins(%a, %b : tensor<256x512xf32>, tensor<512x384xf32>) outs(%c : tensor<256x384xf32>) -> tensor<256x384xf32>
  %1 = linalg.batch_matmul ins(%ba, %bb : tensor<2x128x256xf32>, tensor<2x256x128xf32>) outs(%bc : tensor<2x128x128xf32>) -> tensor<2x128x128xf32>
  %2 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %bt : tensor<256x512xf32>, tensor<384x512xf32>) outs(%c : tensor<256x384xf32>) -> tensor<256x384xf32>
  return
}
