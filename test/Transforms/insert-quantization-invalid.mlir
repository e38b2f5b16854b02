// RUN: infir2-opt %s --split-input-file --infir2-insert-quantization --verify-diagnostics

// Tests that a decision whose blocks do not tile the operand is reported,
// not trusted.
func.func @untiled(%w: tensor<96x128xbf16>, %x: tensor<128x128xbf16>) {
  // expected-error @+1 {{is decided fp8, but its rhs granularity does not fit (after the transpose to K-last, if any): #fp8.blocks<128, 128> does not tile shape [96, 128]}}
  %y = infir2.matmul %x, %w {transpose_rhs, fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<128x128xbf16>, tensor<96x128xbf16> -> tensor<128x96xbf16>
  return
}

// -----

// Tests that an operand quantize cannot take is reported.
func.func @f64(%a: tensor<128x128xf64>) {
  // expected-error @+1 {{is decided fp8, but its lhs has element type 'f64' (quantize takes bf16, f16 or f32)}}
  %y = infir2.matmul %a, %a {transpose_rhs, fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<128x128xf64>, tensor<128x128xf64> -> tensor<128x128xf32>
  return
}

// -----

// Tests that a result FP8 GEMMs cannot write is reported.
func.func @f16(%a: tensor<128x128xf16>) {
  // expected-error @+1 {{is decided fp8 but writes 'f16'; FP8 GEMMs write bf16 or f32}}
  %y = infir2.matmul %a, %a {transpose_rhs, fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<128x128xf16>, tensor<128x128xf16> -> tensor<128x128xf16>
  return
}

// -----

// Tests that an FP8 decision on a GEMM form the recipe cannot rewrite (a
// linalg.matmul on buffers) is reported, not followed.
func.func @buffers(%a: memref<128x128xf32>, %b: memref<128x128xf32>, %c: memref<128x128xf32>) {
  // expected-error @+1 {{is decided fp8, but is not a GEMM form the recipe handles (operand layout or buffers)}}
  linalg.matmul {fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      ins(%a, %b : memref<128x128xf32>, memref<128x128xf32>) outs(%c : memref<128x128xf32>)
  return
}
