// RUN: infir2-opt %s --split-input-file --infir2-derive-decode | FileCheck %s
// RUN: infir2-opt %s --split-input-file --infir2-derive-decode="max-length=64" | FileCheck %s --check-prefix=LEN

// Tests the decode step of a one-layer causal LM: the parameters, the token
// and its position, one cache per key and value ([1, max-length, width],
// the forward's sequence length by default); the ops the logits depend on
// on one token, the attention as cache writes and attention over the
// cache; the loss, targets and segments gone.

func.func @forward(
    %emb: tensor<32x16xf32> {infir2.param = #infir2.param<"model.embed_tokens.weight", normal(std = 0.02)>},
    %wq: tensor<16x16xf32> {infir2.param = #infir2.param<"q.weight", normal(std = 0.02)>},
    %wk: tensor<8x16xf32> {infir2.param = #infir2.param<"k.weight", normal(std = 0.02)>},
    %ids: tensor<2x8xi32>, %targets: tensor<2x8xi32>, %pos: tensor<2x8xi32>, %seg: tensor<2x8xi32>) -> tensor<f32> {
  %h = infir2.embedding %emb[%ids] : tensor<32x16xf32>[tensor<2x8xi32>] -> tensor<2x8x16xf32>
  %q0 = infir2.matmul %h, %wq {transpose_rhs} : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %k0 = infir2.matmul %h, %wk {transpose_rhs} : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x8xf32>
  %q = infir2.rope %q0, %pos {head_dim = 4 : i64, theta = 1.0e+04 : f64} : tensor<2x8x16xf32>, tensor<2x8xi32>
  %k = infir2.rope %k0, %pos {head_dim = 4 : i64, theta = 1.0e+04 : f64} : tensor<2x8x8xf32>, tensor<2x8xi32>
  %a = infir2.attention %q, %k, %k0 segments %seg {causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : tensor<2x8x16xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
  %logits = infir2.matmul %a, %emb {transpose_rhs} : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
  %loss = infir2.cross_entropy %logits, %targets : tensor<2x8x32xf32>, tensor<2x8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// CHECK-LABEL: func.func @forward
// CHECK-LABEL: func.func @decode_step(
// CHECK-SAME: %[[EMB:[^:]+]]: tensor<32x16xf32> {infir2.param = #infir2.param<"model.embed_tokens.weight"
// CHECK-SAME: %[[WQ:[^:]+]]: tensor<16x16xf32> {infir2.param = #infir2.param<"q.weight"
// CHECK-SAME: %[[WK:[^:]+]]: tensor<8x16xf32> {infir2.param = #infir2.param<"k.weight"
// CHECK-SAME: %[[IDS:[^:]+]]: tensor<1x1xi32> {infir2.decode = "input_ids"}
// CHECK-SAME: %[[POS:[^:]+]]: tensor<1x1xi32> {infir2.decode = "positions"}
// CHECK-SAME: %[[KC:[^:]+]]: tensor<1x8x8xf32> {infir2.cache = "layers.0.key"}
// CHECK-SAME: %[[VC:[^:]+]]: tensor<1x8x8xf32> {infir2.cache = "layers.0.value"})
// CHECK-SAME: -> (tensor<1x1x32xf32> {infir2.decode = "logits"}, tensor<1x8x8xf32> {infir2.cache = "layers.0.key"}, tensor<1x8x8xf32> {infir2.cache = "layers.0.value"})
// CHECK: %[[H:.+]] = infir2.embedding %[[EMB]][%[[IDS]]] {{.*}} -> tensor<1x1x16xf32>
// CHECK: %[[Q0:.+]] = infir2.matmul %[[H]], %[[WQ]] {{.*}} -> tensor<1x1x16xf32>
// CHECK: %[[K0:.+]] = infir2.matmul %[[H]], %[[WK]] {{.*}} -> tensor<1x1x8xf32>
// CHECK: %[[Q:.+]] = infir2.rope %[[Q0]], %[[POS]]
// CHECK: %[[K:.+]] = infir2.rope %[[K0]], %[[POS]]
// CHECK: %[[KW:.+]] = infir2.cache_write %[[K]] into %[[KC]] at %[[POS]] : tensor<1x1x8xf32> into tensor<1x8x8xf32>, tensor<1x1xi32>
// CHECK: %[[VW:.+]] = infir2.cache_write %[[K0]] into %[[VC]] at %[[POS]]
// CHECK: %[[A:.+]] = infir2.cache_attention %[[Q]], %[[KW]], %[[VW]] at %[[POS]] {head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64}
// CHECK: %[[L:.+]] = infir2.matmul %[[A]], %[[EMB]] {{.*}} -> tensor<1x1x32xf32>
// CHECK-NOT: cross_entropy
// CHECK: return %[[L]], %[[KW]], %[[VW]]

// LEN: %{{[^:]+}}: tensor<1x64x8xf32> {infir2.cache = "layers.0.key"}

// -----

// Tests that a module with a decode step is left as it is.

func.func @forward(%emb: tensor<32x16xf32> {infir2.param = #infir2.param<"e", zeros>}, %ids: tensor<2x8xi32>, %t: tensor<2x8xi32>) -> tensor<f32> {
  %h = infir2.embedding %emb[%ids] : tensor<32x16xf32>[tensor<2x8xi32>] -> tensor<2x8x16xf32>
  %l = infir2.matmul %h, %emb {transpose_rhs} : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
  %loss = infir2.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<2x8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
func.func @decode_step() {
  return
}

// CHECK-LABEL: func.func @decode_step()
// CHECK-NEXT: return
