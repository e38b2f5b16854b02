// RUN: infir2-opt %s --split-input-file --infir2-assign-precision="cost-model=h100" | FileCheck %s
// RUN: not infir2-opt %s --split-input-file --infir2-assign-precision="cost-model=tpu" 2>&1 | FileCheck %s --check-prefix=BAD

// Tests the cost model's decisions at Qwen2.5-0.5B's shapes, 16,384 tokens,
// on an H100 (GEMM rates measured on the lent H200: 16384x128x896 at 213.3
// TFLOP/s in BF16 and 166.9 in FP8, 16384x4864x896 at 702.1 and 919.7;
// 4 us per call; a quantization at 0.9 x 3.35 TB/s, 4 bytes per element).
// The key and gate projections read x: one group, one quantization of x
// (16384·896·4 bytes / 3.015e12 B/s + 4 us = 23.5 us). Key: 17.6 + 4 = 21.6
// us in BF16, 22.5 + 4 = 26.5 in FP8; gate: 203.4 + 4 = 207.4 in BF16, 155.3
// + 4 = 159.3 in FP8. All BF16: 229.0 us; all FP8: 26.5 + 159.3 + 23.5 =
// 209.3; the gate alone in FP8: 21.6 + 159.3 + 23.5 = 204.4, the best: the
// key projection stays BF16 with the three times, the gate goes FP8.
// CHECK-LABEL: func.func @forward
// CHECK: reason = "the cost model on h100 keeps it in high precision: its group of 2 GEMMs sharing quantized operands takes 204.4 us with 1 of them in FP8, against 209.3 us all in FP8 and 229.0 us none"
// CHECK: precision = fp8, role = fprop
// CHECK-SAME: reason = "linear layer model.layers.0.mlp.gate_proj.weight"
// BAD: error: cost-model must be h100 or h200, got 'tpu'
// RUN: not infir2-opt %s --split-input-file --infir2-assign-precision="cost-model=h100 granularity=mxfp8" 2>&1 | FileCheck %s --check-prefix=MX
// MX: error: cost-model=h100 prices Hopper's FP8 GEMMs and a weight cache; granularity=mxfp8 runs on Blackwell and quantizes its weights every step: leave cost-model out
func.func @forward(%k: tensor<128x896xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.k_proj.weight", normal(std = 0.02)>},
                   %g: tensor<4864x896xbf16> {infir2.param = #infir2.param<"model.layers.0.mlp.gate_proj.weight", normal(std = 0.02)>},
                   %x: tensor<8x2048x896xbf16>) -> (tensor<8x2048x128xbf16>, tensor<8x2048x4864xbf16>) {
  %0 = infir2.matmul %x, %k {transpose_rhs} : tensor<8x2048x896xbf16>, tensor<128x896xbf16> -> tensor<8x2048x128xbf16>
  %1 = infir2.matmul %x, %g {transpose_rhs} : tensor<8x2048x896xbf16>, tensor<4864x896xbf16> -> tensor<8x2048x4864xbf16>
  return %0, %1 : tensor<8x2048x128xbf16>, tensor<8x2048x4864xbf16>
}

// -----

// Tests that GEMMs are grouped through views: x feeds the key and gate
// projections and, reshaped to [tokens, width], a weight-gradient GEMM (128
// x 896 x 16384, nearest the measured 4864 x 896 x 16384: 730.8 and 736.2
// TFLOP/s, 9.1 us either way) that also quantizes dy (16384·128·4 bytes /
// 3.015e12 B/s + 4 us = 6.8 us): one group of three. All BF16: 21.6 + 207.4
// + 9.1 = 238.2 us; all FP8: 26.5 + 159.3 + 9.1 + 23.5 + 6.8 = 225.2; the
// gate alone: 21.6 + 159.3 + 9.1 + 23.5 = 213.5, the best.
// CHECK-LABEL: func.func @through_views
// CHECK: reason = "the cost model on h100 keeps it in high precision: its group of 3 GEMMs sharing quantized operands takes 213.5 us with 1 of them in FP8, against 225.2 us all in FP8 and 238.2 us none"
// CHECK: precision = fp8, role = fprop
// CHECK: reason = "the cost model on h100 keeps it in high precision: its group of 3 GEMMs
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

// -----

// Tests that GEMMs reading different tensors form different groups: the
// key projection of x alone (26.5 + 23.5 = 50.0 us in FP8 with x's
// quantization, against 21.6) stays in high precision as a group of one;
// the gate projection of y alone (159.3 + 23.5 = 182.8 against 207.4) goes
// FP8.
// CHECK-LABEL: func.func @apart
// CHECK: reason = "the cost model on h100 keeps it in high precision: 50.0 us in FP8 with the quantization of its operands, against 21.6 us"
// CHECK: precision = fp8, role = fprop
func.func @apart(%k: tensor<128x896xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.k_proj.weight", normal(std = 0.02)>},
                 %g: tensor<4864x896xbf16> {infir2.param = #infir2.param<"model.layers.0.mlp.gate_proj.weight", normal(std = 0.02)>},
                 %x: tensor<8x2048x896xbf16>, %y: tensor<8x2048x896xbf16>) -> (tensor<8x2048x128xbf16>, tensor<8x2048x4864xbf16>) {
  %0 = infir2.matmul %x, %k {transpose_rhs} : tensor<8x2048x896xbf16>, tensor<128x896xbf16> -> tensor<8x2048x128xbf16>
  %1 = infir2.matmul %y, %g {transpose_rhs} : tensor<8x2048x896xbf16>, tensor<4864x896xbf16> -> tensor<8x2048x4864xbf16>
  return %0, %1 : tensor<8x2048x128xbf16>, tensor<8x2048x4864xbf16>
}
