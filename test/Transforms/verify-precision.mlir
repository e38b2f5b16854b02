// RUN: infir2-opt %s --split-input-file --infir2-verify-precision="scales=pow2" --verify-diagnostics
// RUN: infir2-import --hf-config %examples/mini-qwen/config.json --seq-len 128 --micro-batch 2 | infir2-opt --infir2-autodiff --infir2-optimizer --infir2-assign-precision="min-gemm-flops=0" --infir2-verify-precision="scales=pow2" -o /dev/null
// RUN: not infir2-opt %s --split-input-file --infir2-verify-precision="scales=e8m0" 2>&1 | FileCheck %s --check-prefix=OPTION
// OPTION: for the --scales option: invalid value 'e8m0' (expected any, pow2, fp32 or floor)
// RUN: not infir2-opt %s --split-input-file --infir2-verify-precision="scales=floor" 2>&1 | FileCheck %s --check-prefix=FLOOR
// FLOOR: is decided with pow2 scales, but floor was asked for

// Tests that FP8 on the LM head is refused.
func.func @lm_head(%head: tensor<256x128xbf16> {infir2.param = #infir2.param<"lm_head.weight", normal(std = 0.02)>},
                   %h: tensor<128x128xbf16>, %t: tensor<128xi32>) -> tensor<f32> {
  // expected-error @+1 {{is part of the LM head, which the numerics contract keeps in high precision, but is decided fp8}}
  %logits = infir2.matmul %h, %head {transpose_rhs, fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<128x128xbf16>, tensor<256x128xbf16> -> tensor<128x256xf32>
  %l = infir2.cross_entropy %logits, %t : tensor<128x256xf32>, tensor<128xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that FP8 on a gradient GEMM of the LM head's weight is refused too.
func.func @lm_head_grad(%head: tensor<256x128xbf16> {infir2.param = #infir2.param<"lm_head.weight", normal(std = 0.02)>},
                        %h: tensor<128x128xbf16>, %t: tensor<128xi32>, %dl: tensor<128x256xbf16>) -> tensor<f32> {
  %logits = infir2.matmul %h, %head {transpose_rhs} : tensor<128x128xbf16>, tensor<256x128xbf16> -> tensor<128x256xf32>
  // expected-error @+1 {{is part of the LM head}}
  %dw = infir2.matmul %dl, %h {transpose_lhs, infir2.gemm_role = "wgrad", infir2.gemm_weight = "lm_head.weight",
      fp8.decision = #fp8.decision<precision = fp8, role = wgrad, lhs = #fp8.groups<128, dim = 0>, rhs = #fp8.groups<128, dim = 0>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<128x256xbf16>, tensor<128x128xbf16> -> tensor<256x128xbf16>
  %l = infir2.cross_entropy %logits, %t : tensor<128x256xf32>, tensor<128xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that a decision's blocks must tile the operands.
func.func @untiled(%w: tensor<96x128xbf16>, %x: tensor<128x128xbf16>) {
  // expected-error @+1 {{decided fp8, but its rhs granularity does not fit: #fp8.blocks<128, 128> does not tile shape [96, 128]: block size 128 does not divide dimension 0 (size 96)}}
  %y = infir2.matmul %x, %w {transpose_rhs, fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<128x128xbf16>, tensor<96x128xbf16> -> tensor<128x96xbf16>
  return
}

// -----

// Tests that FP32 scales are refused when power-of-two scales were asked for,
// in a decision, in a quantize and in a quantize_dual.
func.func @scales(%w: tensor<128x128xbf16>, %x: tensor<128x128xbf16>) {
  // expected-error @+1 {{is decided with fp32 scales, but pow2 was asked for}}
  %y = infir2.matmul %x, %w {transpose_rhs, fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.tensorwise, rhs = #fp8.tensorwise, lhs_format = e4m3, rhs_format = e4m3, scales = fp32, reason = "x">}
      : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xbf16>
  // expected-error @+1 {{uses fp32 scales, but pow2 was asked for}}
  %q, %s = fp8.quantize %x to e4m3 by #fp8.tensorwise scale fp32 : tensor<128x128xbf16> -> tensor<128x128xf8E4M3FN>, tensor<1x1xf32>
  // expected-error @+1 {{uses fp32 scales, but pow2 was asked for}}
  %d:4 = fp8.quantize_dual %x to e4m3 by #fp8.tensorwise and transposed by #fp8.tensorwise scale fp32 : tensor<128x128xbf16> -> tensor<128x128xf8E4M3FN>, tensor<1x1xf32>, tensor<128x128xf8E4M3FN>, tensor<1x1xf32>
  return
}

// -----

// Tests that an FP8 decision on a GEMM form the recipe cannot rewrite (a
// linalg.matmul on buffers) is refused.
func.func @buffers(%a: memref<128x128xf32>, %b: memref<128x128xf32>, %c: memref<128x128xf32>) {
  // expected-error @+1 {{is decided fp8, but is not a GEMM form the recipe handles (operand layout or buffers)}}
  linalg.matmul {fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      ins(%a, %b : memref<128x128xf32>, memref<128x128xf32>) outs(%c : memref<128x128xf32>)
  return
}

// -----

// Tests that an optimizer update acts on an FP32 master weight.
func.func @update(%p: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{must update an FP32 master weight (an argument carrying 'infir2.master_of')}}
  %0 = infir2.sgd %p, %p, %s, %s, %s {weight_decay = 0.0 : f64, max_grad_norm = 0.0 : f64} : tensor<4xf32>
  return
}

// -----

// Tests that a consistent step passes: high-precision and FP8 decisions that
// tile, pow2 scales, an update of a master weight.
func.func @fine(%w: tensor<128x128xbf16>, %x: tensor<128x128xbf16>,
                %p: tensor<4xf32> {infir2.master_of = "w"}, %s: tensor<f32>) {
  %y = infir2.matmul %x, %w {transpose_rhs, fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xbf16>
  %z = infir2.matmul %x, %w {fp8.decision = #fp8.decision<precision = high, role = fprop, reason = "y">}
      : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xbf16>
  %0 = infir2.sgd %p, %p, %s, %s, %s {weight_decay = 0.0 : f64, max_grad_norm = 0.0 : f64} : tensor<4xf32>
  return
}
