// RUN: infir2-opt %s --infir2-autodiff --infir2-assign-precision="format=hybrid keep-first-last=1" | FileCheck %s
// RUN: not infir2-opt %s --infir2-assign-precision="granularity=nvfp4" 2>&1 | FileCheck %s --check-prefix=RECIPE
// RUN: not infir2-opt %s --infir2-assign-precision="format=e5m2" 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not infir2-opt %s --infir2-assign-precision="scales=e8m0" 2>&1 | FileCheck %s --check-prefix=SCALES
// RUN: infir2-opt %s --infir2-autodiff --infir2-assign-precision="keep-high=model.layers.1.w:wgrad,model.layers.2.w" | FileCheck %s --check-prefix=KEEP
// RUN: infir2-opt %s --fp8-recipe="keep-high=model.layers.1.w:wgrad,model.layers.2.w" | FileCheck %s --check-prefix=KEEP
// RUN: not infir2-opt %s --infir2-assign-precision="keep-high=model.layers.9.w" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not infir2-opt %s --infir2-assign-precision="keep-high=model.layers.1.w:bwd" 2>&1 | FileCheck %s --check-prefix=ROLE
// RUN: infir2-opt %s --infir2-autodiff --infir2-assign-precision="e5m2=model.layers.1.w:fprop,model.layers.2.w keep-high=model.layers.2.w:wgrad" | FileCheck %s --check-prefix=E5M2
// RUN: infir2-opt %s --infir2-autodiff --infir2-assign-precision="e5m2=model.layers.1.w:fprop,model.layers.2.w keep-high=model.layers.2.w:wgrad" | grep -c 'rhs_format = e5m2' | FileCheck %s --check-prefix=E5M2-COUNT
// RUN: not infir2-opt %s --infir2-assign-precision="e5m2=model.layers.9.w:dgrad" 2>&1 | FileCheck %s --check-prefix=E5M2-NONE
// RUN: not infir2-opt %s --fp8-recipe="e5m2=model.layers.1.w:fwd" 2>&1 | FileCheck %s --check-prefix=E5M2-ROLE
// RECIPE: for the --granularity option: invalid value 'nvfp4' (expected blockwise, tensorwise, rowwise or mxfp8)
// FORMAT: for the --format option: invalid value 'e5m2' (expected e4m3 or hybrid)
// SCALES: for the --scales option: invalid value 'e8m0' (expected pow2, fp32 or floor)
// NONE: error: keep-high names 'model.layers.9.w', which no GEMM has (infir2-opt --infir2-fp8-report lists the GEMMs by weight and role)
// ROLE: error: keep-high entry 'model.layers.1.w:bwd': the role after ':' must be fprop, dgrad or wgrad, got 'bwd'
// E5M2-NONE: error: e5m2 names 'model.layers.9.w:dgrad', which no GEMM has (infir2-opt --infir2-fp8-report lists the GEMMs by weight and role)
// E5M2-ROLE: error: e5m2 entry 'model.layers.1.w:fwd': the role after ':' must be fprop, dgrad or wgrad, got 'fwd'

// e5m2 (a per-GEMM format): both operands of layer 1's fprop and of every
// GEMM of layer 2 in E5M2, saying so, except layer 2's weight gradient,
// which keep-high keeps high (keep-high wins); the rest E4M3.
// E5M2-LABEL: func.func @train_step
// E5M2-DAG: role = fprop, {{.*}}lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "linear layer model.layers.0.w"
// E5M2-DAG: role = dgrad, {{.*}}lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "linear layer model.layers.1.w"
// E5M2-DAG: role = wgrad, {{.*}}lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "linear layer model.layers.1.w"
// E5M2-DAG: role = fprop, {{.*}}lhs_format = e5m2, rhs_format = e5m2, scales = pow2, reason = "linear layer model.layers.1.w, both operands E5M2 (e5m2)"
// E5M2-DAG: role = fprop, {{.*}}lhs_format = e5m2, rhs_format = e5m2, scales = pow2, reason = "linear layer model.layers.2.w, both operands E5M2 (e5m2)"
// E5M2-DAG: role = dgrad, {{.*}}lhs_format = e5m2, rhs_format = e5m2, scales = pow2, reason = "linear layer model.layers.2.w, both operands E5M2 (e5m2)"
// E5M2-DAG: precision = high, role = wgrad, reason = "kept high by bisection (keep-high)"
// Exactly those: nothing else is E5M2 (three in @train_step, and the two
// fprop ones in @forward, which the step is derived from).
// E5M2-COUNT: 5

// keep-high (infir2-bisect's answer): layer 1's weight gradient and all of
// layer 2 in high precision, each saying why; the rest in FP8.
// KEEP-LABEL: func.func @train_step
// KEEP-NOT: reason = "linear layer model.layers.2.w"
// KEEP-DAG: role = fprop, {{.*}}reason = "linear layer model.layers.0.w"
// KEEP-DAG: role = fprop, {{.*}}reason = "linear layer model.layers.1.w"
// KEEP-DAG: role = dgrad, {{.*}}reason = "linear layer model.layers.1.w"
// KEEP-DAG: precision = high, role = wgrad, reason = "kept high by bisection (keep-high)"
// KEEP-DAG: precision = high, role = fprop, reason = "kept high by bisection (keep-high)"
// KEEP-DAG: precision = high, role = dgrad, reason = "kept high by bisection (keep-high)"

// Tests keep-first-last on three decoder layers (only layer 1 runs in FP8)
// and the hybrid format, where the incoming gradient operand of dgrad and
// wgrad GEMMs is E5M2 and everything else E4M3.
// CHECK-LABEL: func.func @train_step
// CHECK-DAG: reason = "decoder layer 0 is among the first or last 1 (keep-first-last)"
// CHECK-DAG: reason = "decoder layer 2 is among the first or last 1 (keep-first-last)"
// CHECK-DAG: role = fprop, {{.*}} lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "linear layer model.layers.1.w"
// CHECK-DAG: role = dgrad, {{.*}} lhs_format = e5m2, rhs_format = e4m3, scales = pow2, reason = "linear layer model.layers.1.w"
// CHECK-DAG: role = wgrad, {{.*}} lhs_format = e5m2, rhs_format = e4m3, scales = pow2, reason = "linear layer model.layers.1.w"
func.func @forward(%w0: tensor<256x256xbf16> {infir2.param = #infir2.param<"model.layers.0.w", normal(std = 0.02)>},
                   %w1: tensor<256x256xbf16> {infir2.param = #infir2.param<"model.layers.1.w", normal(std = 0.02)>},
                   %w2: tensor<256x256xbf16> {infir2.param = #infir2.param<"model.layers.2.w", normal(std = 0.02)>},
                   %x: tensor<2x128x256xbf16>) -> tensor<bf16> {
  %0 = infir2.matmul %x, %w0 {transpose_rhs} : tensor<2x128x256xbf16>, tensor<256x256xbf16> -> tensor<2x128x256xbf16>
  %1 = infir2.matmul %0, %w1 {transpose_rhs} : tensor<2x128x256xbf16>, tensor<256x256xbf16> -> tensor<2x128x256xbf16>
  %2 = infir2.matmul %1, %w2 {transpose_rhs} : tensor<2x128x256xbf16>, tensor<256x256xbf16> -> tensor<2x128x256xbf16>
  %l = infir2.reduce_sum %2 : tensor<2x128x256xbf16> -> tensor<bf16>
  return %l : tensor<bf16>
}
