// Tests that the hand-written example model verifies, prints back to the same
// text, survives the generic form, and has the structure its header states.
// RUN: infir2-opt %examples/tiny-qwen/model.mlir > %t.1.mlir
// RUN: infir2-opt %t.1.mlir > %t.2.mlir
// RUN: diff %t.1.mlir %t.2.mlir
// RUN: infir2-opt %t.1.mlir --mlir-print-op-generic | infir2-opt > %t.3.mlir
// RUN: diff %t.1.mlir %t.3.mlir
// RUN: FileCheck %s < %t.1.mlir
// 26 parameter tensors; 7 GEMMs per layer plus the tied LM head.
// RUN: grep -o 'infir2.param = ' %t.1.mlir | count 26
// RUN: grep -o 'infir2.matmul ' %t.1.mlir | count 15
// RUN: grep -o 'infir2.attention ' %t.1.mlir | count 2
// RUN: grep -o 'infir2.rms_norm ' %t.1.mlir | count 5

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[EMBED:[^:]+]]: tensor<256x256xbf16> {infir2.param = #infir2.param<"model.embed_tokens.weight", normal(std = 2.000000e-02)>}
// CHECK-SAME: {infir2.param = #infir2.param<"model.layers.1.mlp.down_proj.weight", normal(std = 2.000000e-02)>}
// CHECK-SAME: {infir2.param = #infir2.param<"model.norm.weight", ones>}
// CHECK-SAME: -> tensor<f32>
// CHECK: infir2.embedding %[[EMBED]]
// CHECK: infir2.attention {{.*}} {causal, head_dim = 64 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64}
// CHECK: infir2.swiglu
// CHECK: %[[LOGITS:.+]] = infir2.matmul %{{.+}}, %[[EMBED]] {transpose_rhs} : tensor<4x128x256xbf16>, tensor<256x256xbf16> -> tensor<4x128x256xf32>
// CHECK: %[[LOSS:.+]] = infir2.cross_entropy %[[LOGITS]], %{{.+}} mask %{{.+}}
// CHECK: return %[[LOSS]] : tensor<f32>
