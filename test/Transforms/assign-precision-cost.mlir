// RUN: infir2-opt %s --split-input-file --infir2-assign-precision="cost-model=h100" | FileCheck %s
// RUN: not infir2-opt %s --split-input-file --infir2-assign-precision="cost-model=tpu" 2>&1 | FileCheck %s --check-prefix=BAD

// Tests the cost model's decisions at Qwen2.5-0.5B's shapes, 16,384 tokens,
// on an H100 (GEMM rates measured on the lent H200: 16384x128x896 at 213.3
// TFLOP/s in BF16 and 166.9 in FP8, 16384x4864x896 at 702.1 and 919.7;
// 4 us per call; 0.9 x 3.35 TB/s for a quantization, 4 bytes per element).
// The key projection: BF16 2·16384·128·896 / 213.3e12 s + 4 us = 21.6 us;
// FP8 the same FLOPs at 166.9 (26.5 us) plus its share of quantizing x
// (16384·896·4 bytes / 3.015e12 B/s + 4 us = 23.5 us, read by two GEMMs):
// 38.3 us. It stays in BF16, with both times. The gate projection: 203.4 +
// 4 us in BF16 against 155.3 + 4 + 11.7 us in FP8: FP8.
// CHECK-LABEL: func.func @forward
// CHECK: reason = "the cost model on h100 predicts FP8 would not pay: 38.3 us (the GEMM and its share of its operands' quantization) against 21.6 us in BF16"
// CHECK: precision = fp8, role = fprop
// CHECK-SAME: reason = "linear layer model.layers.0.mlp.gate_proj.weight"
// BAD: error: cost-model must be h100 or h200, got 'tpu'
func.func @forward(%k: tensor<128x896xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.k_proj.weight", normal(std = 0.02)>},
                   %g: tensor<4864x896xbf16> {infir2.param = #infir2.param<"model.layers.0.mlp.gate_proj.weight", normal(std = 0.02)>},
                   %x: tensor<8x2048x896xbf16>) -> (tensor<8x2048x128xbf16>, tensor<8x2048x4864xbf16>) {
  %0 = infir2.matmul %x, %k {transpose_rhs} : tensor<8x2048x896xbf16>, tensor<128x896xbf16> -> tensor<8x2048x128xbf16>
  %1 = infir2.matmul %x, %g {transpose_rhs} : tensor<8x2048x896xbf16>, tensor<4864x896xbf16> -> tensor<8x2048x4864xbf16>
  return %0, %1 : tensor<8x2048x128xbf16>, tensor<8x2048x4864xbf16>
}

// -----

// Tests that a quantization's readers are counted through views: x feeds the
// key projection, the gate projection and, reshaped to [tokens, width], a
// weight-gradient GEMM; the key projection's share of quantizing x is a
// third: 26.5 + 23.5 / 3 = 34.3 us.
// CHECK-LABEL: func.func @through_views
// CHECK: reason = "the cost model on h100 predicts FP8 would not pay: 34.3 us (the GEMM and its share of its operands' quantization) against 21.6 us in BF16"
func.func @through_views(%k: tensor<128x896xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.k_proj.weight", normal(std = 0.02)>},
                         %g: tensor<4864x896xbf16> {infir2.param = #infir2.param<"model.layers.0.mlp.gate_proj.weight", normal(std = 0.02)>},
                         %x: tensor<8x2048x896xbf16>, %dy: tensor<8x2048x128xbf16>) -> (tensor<8x2048x128xbf16>, tensor<8x2048x4864xbf16>, tensor<128x896xbf16>) {
  %0 = infir2.matmul %x, %k {transpose_rhs} : tensor<8x2048x896xbf16>, tensor<128x896xbf16> -> tensor<8x2048x128xbf16>
  %1 = infir2.matmul %x, %g {transpose_rhs} : tensor<8x2048x896xbf16>, tensor<4864x896xbf16> -> tensor<8x2048x4864xbf16>
  %xr = infir2.reshape %x : tensor<8x2048x896xbf16> -> tensor<16384x896xbf16>
  %dyr = infir2.reshape %dy : tensor<8x2048x128xbf16> -> tensor<16384x128xbf16>
  %2 = infir2.matmul %dyr, %xr {transpose_lhs, infir2.gemm_role = "wgrad"} : tensor<16384x128xbf16>, tensor<16384x896xbf16> -> tensor<128x896xbf16>
  return %0, %1, %2 : tensor<8x2048x128xbf16>, tensor<8x2048x4864xbf16>, tensor<128x896xbf16>
}
