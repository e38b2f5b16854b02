// RUN: infir2-opt %s --split-input-file --infir2-assign-precision --infir2-fp8-report=to-stdout -o /dev/null | FileCheck %s
// RUN: infir2-opt %s --split-input-file --infir2-fp8-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=NODECISION

// Tests one row per GEMM (weight, role, MxNxK with the batch folded into M,
// precision, each operand's format and granularity, reason) and the totals:
// the fprop GEMMs carry 2*256*512*256 and 2*256*384*512 flops, so the FP8 one
// is 40% of them.
// CHECK: @forward: 2 GEMMs
// CHECK-NEXT: gemm role MxNxK prec lhs rhs reason
// CHECK-NEXT: model.layers.0.mlp.up_proj.weight fprop 256x512x256 fp8 e4m3 1x128@2 e4m3 128x128 linear layer
// CHECK-NEXT: lm_head.weight fprop 256x384x512 high the LM head stays in high precision
// CHECK-NEXT: fprop: 1 of 2 GEMMs in FP8, 40.0% of their flops
// NODECISION: model.layers.0.mlp.up_proj.weight - 256x512x256 - no decision (run --infir2-assign-precision)
func.func @forward(%w: tensor<512x256xbf16> {infir2.param = #infir2.param<"model.layers.0.mlp.up_proj.weight", normal(std = 0.02)>},
                   %head: tensor<384x512xbf16> {infir2.param = #infir2.param<"lm_head.weight", normal(std = 0.02)>},
                   %x: tensor<2x128x256xbf16>, %t: tensor<2x128xi32>) -> tensor<f32> {
  %h = infir2.matmul %x, %w {transpose_rhs} : tensor<2x128x256xbf16>, tensor<512x256xbf16> -> tensor<2x128x512xbf16>
  %logits = infir2.matmul %h, %head {transpose_rhs} : tensor<2x128x512xbf16>, tensor<384x512xbf16> -> tensor<2x128x384xf32>
  %l = infir2.cross_entropy %logits, %t : tensor<2x128x384xf32>, tensor<2x128xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests a GEMM without a weight, named by its location, in the wgrad totals.
// CHECK: @grads: 1 GEMMs
// CHECK: loc("dw") wgrad 256x256x256 fp8 e4m3 1x128@0 e4m3 1x128@0 a GEMM the policy allows in FP8
// CHECK: wgrad: 1 of 1 GEMMs in FP8, 100.0% of their flops
func.func @grads(%dy: tensor<256x256xbf16>, %x: tensor<256x256xbf16>) {
  %dw = infir2.matmul %dy, %x {infir2.gemm_role = "wgrad", infir2.gemm_grad_operand = 0 : i64, transpose_lhs}
      : tensor<256x256xbf16>, tensor<256x256xbf16> -> tensor<256x256xbf16> loc("dw")
  return
}

// -----

// Tests that a GEMM on buffers, whose sizes the report cannot read, gets a
// row without sizes and no flop share, rather than a crash.
// CHECK: @buffers: 1 GEMMs
// CHECK-NEXT: gemm role MxNxK prec lhs rhs reason
// CHECK-NEXT: loc("mm") fprop - high a GEMM form the recipe does not handle (operand layout or buffers)
// CHECK-NEXT: fprop: 0 of 1 GEMMs in FP8, 0.0% of their flops
func.func @buffers(%a: memref<128x128xf32>, %b: memref<128x128xf32>, %c: memref<128x128xf32>) {
  linalg.matmul ins(%a, %b : memref<128x128xf32>, memref<128x128xf32>) outs(%c : memref<128x128xf32>) loc("mm")
  return
}
