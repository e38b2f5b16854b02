// RUN: infir2-opt %s --infir2-autodiff --infir2-assign-precision="format=hybrid keep-first-last=1" | FileCheck %s
// RUN: not infir2-opt %s --infir2-assign-precision="granularity=mxfp8" 2>&1 | FileCheck %s --check-prefix=RECIPE
// RUN: not infir2-opt %s --infir2-assign-precision="format=e5m2" 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not infir2-opt %s --infir2-assign-precision="scales=e8m0" 2>&1 | FileCheck %s --check-prefix=SCALES
// RECIPE: for the --granularity option: invalid value 'mxfp8' (expected blockwise, tensorwise or rowwise)
// FORMAT: for the --format option: invalid value 'e5m2' (expected e4m3 or hybrid)
// SCALES: for the --scales option: invalid value 'e8m0' (expected pow2 or fp32)

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
