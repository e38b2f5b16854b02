// RUN: infir2-opt %s --split-input-file | FileCheck %s
// RUN: infir2-opt %s --split-input-file --mlir-print-op-generic | infir2-opt --split-input-file | FileCheck %s

// Tests that the embedding lookup round-trips.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[T:.+]]: tensor<256x64xbf16>, %[[IDS:.+]]: tensor<2x32xi32>)
// CHECK: infir2.embedding %[[T]][%[[IDS]]] : tensor<256x64xbf16>[tensor<2x32xi32>] -> tensor<2x32x64xbf16>
func.func @embedding(%t: tensor<256x64xbf16>, %ids: tensor<2x32xi32>) -> tensor<2x32x64xbf16> {
  %0 = infir2.embedding %t[%ids] : tensor<256x64xbf16>[tensor<2x32xi32>] -> tensor<2x32x64xbf16>
  return %0 : tensor<2x32x64xbf16>
}

// -----

// Tests a linear layer (shared weight, transposed), a batched product, a
// weight-gradient product with transposed lhs, and an f32 result.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[X:.+]]: tensor<2x32x64xbf16>, %[[W:.+]]: tensor<176x64xbf16>, %[[A:.+]]: tensor<4x8x16xf32>, %[[B:.+]]: tensor<4x16x8xf32>)
// CHECK: infir2.matmul %[[X]], %[[W]] {transpose_rhs} : tensor<2x32x64xbf16>, tensor<176x64xbf16> -> tensor<2x32x176xbf16>
// CHECK: infir2.matmul %[[A]], %[[B]] : tensor<4x8x16xf32>, tensor<4x16x8xf32> -> tensor<4x8x8xf32>
// CHECK: infir2.matmul %[[A]], %[[A]] {transpose_lhs} : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x16x16xf32>
// CHECK: infir2.matmul %[[X]], %[[W]] {transpose_rhs} : tensor<2x32x64xbf16>, tensor<176x64xbf16> -> tensor<2x32x176xf32>
func.func @matmul(%x: tensor<2x32x64xbf16>, %w: tensor<176x64xbf16>, %a: tensor<4x8x16xf32>, %b: tensor<4x16x8xf32>) {
  %0 = infir2.matmul %x, %w {transpose_rhs} : tensor<2x32x64xbf16>, tensor<176x64xbf16> -> tensor<2x32x176xbf16>
  %1 = infir2.matmul %a, %b : tensor<4x8x16xf32>, tensor<4x16x8xf32> -> tensor<4x8x8xf32>
  %2 = infir2.matmul %a, %a {transpose_lhs} : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x16x16xf32>
  %3 = infir2.matmul %x, %w {transpose_rhs} : tensor<2x32x64xbf16>, tensor<176x64xbf16> -> tensor<2x32x176xf32>
  return
}

// -----

// Tests a weight gradient added to its FP32 accumulator by the GEMM.
// CHECK-LABEL: func.func @matmul_acc
// CHECK-SAME: (%[[DY:.+]]: tensor<64x176xbf16>, %[[X:.+]]: tensor<64x32xbf16>, %[[ACC:.+]]: tensor<176x32xf32>)
// CHECK: infir2.matmul %[[DY]], %[[X]] acc(%[[ACC]] : tensor<176x32xf32>) {transpose_lhs} : tensor<64x176xbf16>, tensor<64x32xbf16> -> tensor<176x32xf32>
func.func @matmul_acc(%dy: tensor<64x176xbf16>, %x: tensor<64x32xbf16>, %acc: tensor<176x32xf32>) -> tensor<176x32xf32> {
  %0 = infir2.matmul %dy, %x acc(%acc : tensor<176x32xf32>) {transpose_lhs} : tensor<64x176xbf16>, tensor<64x32xbf16> -> tensor<176x32xf32>
  return %0 : tensor<176x32xf32>
}

// -----

// Tests rms_norm, rope with shared and per-batch positions, and attention
// with grouped-query heads, a causal mask, an explicit scale and segments.
// CHECK-LABEL: func.func @decoder_pieces
// CHECK: %[[N:.+]] = infir2.rms_norm %{{.+}}, %{{.+}} {epsilon = 9.9999999999999995E-7 : f64} : tensor<2x32x64xbf16>, tensor<64xbf16>
// CHECK: %[[Q:.+]] = infir2.rope %[[N]], %{{.+}} {head_dim = 16 : i64, theta = 1.000000e+06 : f64} : tensor<2x32x64xbf16>, tensor<32xi32>
// CHECK: %[[K:.+]] = infir2.rope %{{.+}}, %{{.+}} {head_dim = 16 : i64, theta = 1.000000e+04 : f64} : tensor<2x32x32xbf16>, tensor<2x32xi64>
// CHECK: infir2.attention %[[Q]], %[[K]], %{{.+}} {causal, head_dim = 16 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64} : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16> -> tensor<2x32x64xbf16>
// CHECK: infir2.attention %[[Q]], %[[K]], %{{.+}} {head_dim = 16 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 1.250000e-01 : f64}
// CHECK: infir2.attention %[[Q]], %[[K]], %{{.+}} segments %[[SEG:.+]] {causal, head_dim = 16 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64} : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>, tensor<2x32xi64> -> tensor<2x32x64xbf16>
func.func @decoder_pieces(%h: tensor<2x32x64xbf16>, %w: tensor<64xbf16>, %pos: tensor<32xi32>,
                          %k: tensor<2x32x32xbf16>, %bpos: tensor<2x32xi64>, %v: tensor<2x32x32xbf16>) {
  %n = infir2.rms_norm %h, %w {epsilon = 1.0e-6 : f64} : tensor<2x32x64xbf16>, tensor<64xbf16>
  %q = infir2.rope %n, %pos {head_dim = 16 : i64, theta = 1.0e6 : f64} : tensor<2x32x64xbf16>, tensor<32xi32>
  %kr = infir2.rope %k, %bpos {head_dim = 16 : i64, theta = 1.0e4 : f64} : tensor<2x32x32xbf16>, tensor<2x32xi64>
  %o = infir2.attention %q, %kr, %v {causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16> -> tensor<2x32x64xbf16>
  %o2 = infir2.attention %q, %kr, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.125 : f64}
      : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16> -> tensor<2x32x64xbf16>
  %o3 = infir2.attention %q, %kr, %v segments %bpos {causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>, tensor<2x32xi64> -> tensor<2x32x64xbf16>
  return
}

// -----

// Tests the activations and the broadcasting elementwise ops.
// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[G:.+]]: tensor<2x32x176xbf16>, %[[U:.+]]: tensor<2x32x176xbf16>, %[[B:.+]]: tensor<176xbf16>)
// CHECK: infir2.silu %[[G]] : tensor<2x32x176xbf16>
// CHECK: infir2.swiglu %[[G]], %[[U]] : tensor<2x32x176xbf16>
// CHECK: infir2.add %[[G]], %[[U]] : tensor<2x32x176xbf16>, tensor<2x32x176xbf16>
// CHECK: infir2.add %[[G]], %[[B]] : tensor<2x32x176xbf16>, tensor<176xbf16>
// CHECK: infir2.mul %[[U]], %[[B]] : tensor<2x32x176xbf16>, tensor<176xbf16>
func.func @elementwise(%g: tensor<2x32x176xbf16>, %u: tensor<2x32x176xbf16>, %b: tensor<176xbf16>) {
  %0 = infir2.silu %g : tensor<2x32x176xbf16>
  %1 = infir2.swiglu %g, %u : tensor<2x32x176xbf16>
  %2 = infir2.add %g, %u : tensor<2x32x176xbf16>, tensor<2x32x176xbf16>
  %3 = infir2.add %g, %b : tensor<2x32x176xbf16>, tensor<176xbf16>
  %4 = infir2.mul %u, %b : tensor<2x32x176xbf16>, tensor<176xbf16>
  return
}

// -----

// Tests cross_entropy without a mask, with a float mask and with an i1 mask
// and a custom ignore index.
// CHECK-LABEL: func.func @loss
// CHECK-SAME: (%[[L:.+]]: tensor<2x32x256xf32>, %[[T:.+]]: tensor<2x32xi32>, %[[M:.+]]: tensor<2x32xf32>, %[[MB:.+]]: tensor<2x32xi1>)
// CHECK: infir2.cross_entropy %[[L]], %[[T]] : tensor<2x32x256xf32>, tensor<2x32xi32> -> tensor<f32>
// CHECK: infir2.cross_entropy %[[L]], %[[T]] mask %[[M]] : tensor<2x32x256xf32>, tensor<2x32xi32>, tensor<2x32xf32> -> tensor<f32>
// CHECK: infir2.cross_entropy %[[L]], %[[T]] mask %[[MB]] {ignore_index = 0 : i64} : tensor<2x32x256xf32>, tensor<2x32xi32>, tensor<2x32xi1> -> tensor<f32>
func.func @loss(%l: tensor<2x32x256xf32>, %t: tensor<2x32xi32>, %m: tensor<2x32xf32>, %mb: tensor<2x32xi1>) {
  %0 = infir2.cross_entropy %l, %t : tensor<2x32x256xf32>, tensor<2x32xi32> -> tensor<f32>
  %1 = infir2.cross_entropy %l, %t mask %m : tensor<2x32x256xf32>, tensor<2x32xi32>, tensor<2x32xf32> -> tensor<f32>
  %2 = infir2.cross_entropy %l, %t mask %mb {ignore_index = 0 : i64} : tensor<2x32x256xf32>, tensor<2x32xi32>, tensor<2x32xi1> -> tensor<f32>
  return
}

// -----

// Tests reshape and transpose.
// CHECK-LABEL: func.func @shapes
// CHECK: infir2.reshape %{{.+}} : tensor<2x32x64xbf16> -> tensor<64x64xbf16>
// CHECK: infir2.transpose %{{.+}} [1, 0] : tensor<64x128xbf16> -> tensor<128x64xbf16>
// CHECK-LABEL: func.func @fp8_cache(
// CHECK-SAME: {infir2.fp8_cache = "w:data"}
// CHECK-SAME: {infir2.fp8_cache = "w.t:scale"}
func.func @shapes(%x: tensor<2x32x64xbf16>, %y: tensor<64x128xbf16>) {
  %0 = infir2.reshape %x : tensor<2x32x64xbf16> -> tensor<64x64xbf16>
  %1 = infir2.transpose %y [1, 0] : tensor<64x128xbf16> -> tensor<128x64xbf16>
  return
}

// Tests the FP8 weight cache's argument attributes (verified by the dialect).
func.func @fp8_cache(%codes: tensor<256x128xf8E4M3FN> {infir2.fp8_cache = "w:data"},
                     %scales: tensor<1x2xf32> {infir2.fp8_cache = "w.t:scale"}) {
  return
}

// -----

// Tests that parameter declarations round-trip, on a definition and on a
// declaration.
// CHECK-LABEL: func.func @params
// CHECK-SAME: {infir2.param = #infir2.param<"model.embed_tokens.weight", normal(std = 2.000000e-02)>}
// CHECK-SAME: {infir2.param = #infir2.param<"model.norm.weight", ones>}
// CHECK-SAME: {infir2.param = #infir2.param<"model.layers.0.self_attn.q_proj.bias", zeros>}
// CHECK-SAME: %{{.+}}: tensor<2x32xi32>)
func.func @params(%e: tensor<256x64xbf16> {infir2.param = #infir2.param<"model.embed_tokens.weight", normal(std = 0.02)>},
                  %n: tensor<64xf32> {infir2.param = #infir2.param<"model.norm.weight", ones>},
                  %b: tensor<64xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.q_proj.bias", zeros>},
                  %ids: tensor<2x32xi32>) {
  return
}
// CHECK-LABEL: func.func private @external
// CHECK-SAME: {infir2.param = #infir2.param<"w", ones>}
func.func private @external(tensor<8xf32> {infir2.param = #infir2.param<"w", ones>})

// -----

// Tests the backward-pass ops: convert, reduce_sum and the gradient ops.
// CHECK-LABEL: func.func @backward_ops
// CHECK: infir2.convert %{{.+}} : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// CHECK: infir2.reduce_sum %{{.+}} : tensor<2x4x8xf32> -> tensor<8xf32>
// CHECK: infir2.reduce_sum %{{.+}} : tensor<2x4x8xf32> -> tensor<f32>
// CHECK: infir2.silu_grad %{{.+}}, %{{.+}} : tensor<2x4x8xf32>
// CHECK: %{{.+}}, %{{.+}} = infir2.swiglu_grad %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x4x8xf32>
// CHECK: %{{.+}}, %{{.+}} = infir2.rms_norm_grad %{{.+}}, %{{.+}}, %{{.+}} {epsilon = 9.9999999999999995E-7 : f64} : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK: %{{.+}}, %{{.+}} = infir2.rms_norm_grad %{{.+}}, %{{.+}}, %{{.+}} residual(%{{.+}} : tensor<2x4x8xf32>) {epsilon = 9.9999999999999995E-7 : f64} : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK: infir2.rope_grad %{{.+}}, %{{.+}} {head_dim = 4 : i64, theta = 1.000000e+04 : f64} : tensor<2x4x8xf32>, tensor<4xi32>
// CHECK: %{{.+}}, %{{.+}}, %{{.+}} = infir2.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {causal, head_dim = 4 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64} : tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>
// CHECK: infir2.cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} : tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32>, tensor<2x4xf32>{{$}}
// CHECK: infir2.cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32> -> tensor<2x4x8xbf16>
// CHECK: infir2.embedding_grad %{{.+}}, %{{.+}} : tensor<2x4xi32>, tensor<2x4x8xf32> -> tensor<16x8xf32>
func.func @backward_ops(%x: tensor<2x4x8xf32>, %dy: tensor<2x4x8xf32>, %w: tensor<8xf32>, %pos: tensor<4xi32>,
                        %k: tensor<2x4x4xf32>, %ids: tensor<2x4xi32>, %m: tensor<2x4xf32>, %dl: tensor<f32>) {
  %0 = infir2.convert %x : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
  %1 = infir2.reduce_sum %x : tensor<2x4x8xf32> -> tensor<8xf32>
  %2 = infir2.reduce_sum %x : tensor<2x4x8xf32> -> tensor<f32>
  %3 = infir2.silu_grad %x, %dy : tensor<2x4x8xf32>
  %4:2 = infir2.swiglu_grad %x, %x, %dy : tensor<2x4x8xf32>
  %5:2 = infir2.rms_norm_grad %x, %w, %dy {epsilon = 1.0e-6 : f64} : tensor<2x4x8xf32>, tensor<8xf32>
  %50:2 = infir2.rms_norm_grad %x, %w, %dy residual(%x : tensor<2x4x8xf32>) {epsilon = 1.0e-6 : f64} : tensor<2x4x8xf32>, tensor<8xf32>
  %6 = infir2.rope_grad %dy, %pos {head_dim = 4 : i64, theta = 1.0e4 : f64} : tensor<2x4x8xf32>, tensor<4xi32>
  %7:3 = infir2.attention_grad %x, %k, %k, %dy {causal, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64}
      : tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>
  %8 = infir2.cross_entropy_grad %x, %ids, %dl mask %m : tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32>, tensor<2x4xf32>
  %80 = infir2.cross_entropy_grad %x, %ids, %dl : tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32> -> tensor<2x4x8xbf16>
  %9 = infir2.embedding_grad %ids, %dy : tensor<2x4xi32>, tensor<2x4x8xf32> -> tensor<16x8xf32>
  return
}

// -----

// Tests gradient accumulators on arguments and results.
// CHECK-LABEL: func.func @accumulators
// CHECK-SAME: (%{{.+}}: tensor<4xf32> {infir2.grad_of = "w"}) -> (tensor<4xf32> {infir2.grad_of = "w"})
func.func @accumulators(%acc: tensor<4xf32> {infir2.grad_of = "w"}) -> (tensor<4xf32> {infir2.grad_of = "w"}) {
  return %acc : tensor<4xf32>
}

// -----

// Tests the optimizer ops and the state attributes of an optimizer step.
// CHECK-LABEL: func.func @optimizer_ops
// CHECK-SAME: {infir2.master_of = "w"}
// CHECK-SAME: {infir2.moment2_of = "w"}
// CHECK-SAME: {infir2.input = "learning_rate"}
// CHECK-SAME: {infir2.working_copy_of = "w"}
// CHECK: %[[N:.+]] = infir2.global_norm %{{.+}}, %{{.+}} scale %{{.+}} : tensor<8x4xf32>, tensor<8x4xf32>
// CHECK: infir2.adamw {{.*}}, %[[N]] {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, epsilon = 1.000000e-08 : f64, max_grad_norm = 1.000000e+00 : f64, weight_decay = 1.000000e-01 : f64} : tensor<8x4xf32>
// CHECK: infir2.sgd {{.*}}, %[[N]] {max_grad_norm = 0.000000e+00 : f64, weight_decay = 0.000000e+00 : f64} : tensor<8x4xf32>
func.func @optimizer_ops(%p: tensor<8x4xf32> {infir2.master_of = "w"}, %g: tensor<8x4xf32> {infir2.grad_of = "w"},
                         %m: tensor<8x4xf32> {infir2.moment1_of = "w"}, %v: tensor<8x4xf32> {infir2.moment2_of = "w"},
                         %lr: tensor<f32> {infir2.input = "learning_rate"}, %t: tensor<f32> {infir2.input = "step"},
                         %s: tensor<f32> {infir2.input = "grad_scale"}) -> (tensor<8x4xbf16> {infir2.working_copy_of = "w"}) {
  %n = infir2.global_norm %g, %g scale %s : tensor<8x4xf32>, tensor<8x4xf32>
  %p2, %m2, %v2 = infir2.adamw %p, %g, %m, %v, %lr, %t, %s, %n
      {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<8x4xf32>
  %p3 = infir2.sgd %p2, %g, %lr, %s, %n {weight_decay = 0.0 : f64, max_grad_norm = 0.0 : f64} : tensor<8x4xf32>
  %w = infir2.convert %p3 : tensor<8x4xf32> -> tensor<8x4xbf16>
  return %w : tensor<8x4xbf16>
}

// -----

// Tests that a group update round-trips, with and without working copies.
// CHECK-LABEL: func.func @adamw_group
// CHECK: %{{.+}}:2, %{{.+}}:2, %{{.+}}:2, %{{.+}} = infir2.adamw_group (%{{.+}}, %{{.+}}) grads(%{{.+}}, %{{.+}}) moments(%{{.+}}, %{{.+}}) (%{{.+}}, %{{.+}}) lr %{{.+}} step %{{.+}} scale %{{.+}} norm %{{.+}} {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, epsilon = 1.000000e-08 : f64, max_grad_norm = 1.000000e+00 : f64, weight_decays = array<f64: 1.000000e-01, 0.000000e+00>, working = array<i64: 0>} : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xbf16>
// CHECK: %{{.+}}, %{{.+}}, %{{.+}} = infir2.adamw_group (%{{.+}}) grads(%{{.+}}) moments(%{{.+}}) (%{{.+}}) lr %{{.+}} step %{{.+}} scale %{{.+}} norm %{{.+}} {{{.*}}working = array<i64>} : tensor<4xf32>
func.func @adamw_group(%a: tensor<8x4xf32>, %b: tensor<4xf32>, %s: tensor<f32>) {
  %p:2, %m:2, %v:2, %w = infir2.adamw_group (%a, %b) grads (%a, %b) moments (%a, %b) (%a, %b) lr %s step %s scale %s norm %s
      {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, max_grad_norm = 1.0 : f64,
       weight_decays = array<f64: 0.1, 0.0>, working = array<i64: 0>} : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xbf16>
  %p1, %m1, %v1 = infir2.adamw_group (%b) grads (%b) moments (%b) (%b) lr %s step %s scale %s norm %s
      {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, max_grad_norm = 1.0 : f64,
       weight_decays = array<f64: 0.0>, working = array<i64>} : tensor<4xf32>
  return
}

// -----

// Tests the all-reduce of one gradient bucket.
// CHECK-LABEL: func.func @all_reduce
// CHECK: %{{.+}}:2 = infir2.all_reduce %{{.+}}, %{{.+}} : tensor<8x4xf32>, tensor<4xf32>
func.func @all_reduce(%a: tensor<8x4xf32>, %b: tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>) {
  %r:2 = infir2.all_reduce %a, %b : tensor<8x4xf32>, tensor<4xf32>
  return %r#0, %r#1 : tensor<8x4xf32>, tensor<4xf32>
}

// -----

// Tests ZeRO-1's collectives and the norm over every rank's shards: 5 rows
// over 2 ranks are shards of 3 (the last one padded).
// CHECK-LABEL: func.func @zero1
// CHECK: %[[S:.+]]:2 = infir2.reduce_scatter %{{.+}}, %{{.+}} {world_size = 2 : i64} : tensor<8x4xf32>, tensor<5xf32> -> tensor<4x4xf32>, tensor<3xf32>
// CHECK: infir2.global_norm %[[S]]#0, %[[S]]#1 scale %{{.+}} {across_ranks} : tensor<4x4xf32>, tensor<3xf32>
// CHECK: infir2.all_gather %{{.+}} {world_size = 2 : i64} : tensor<3xbf16> -> tensor<5xbf16>
func.func @zero1(%a: tensor<8x4xf32>, %b: tensor<5xf32>, %s: tensor<f32>, %w: tensor<3xbf16>) -> (tensor<f32>, tensor<5xbf16>) {
  %r:2 = infir2.reduce_scatter %a, %b {world_size = 2 : i64} : tensor<8x4xf32>, tensor<5xf32> -> tensor<4x4xf32>, tensor<3xf32>
  %n = infir2.global_norm %r#0, %r#1 scale %s {across_ranks} : tensor<4x4xf32>, tensor<3xf32>
  %g = infir2.all_gather %w {world_size = 2 : i64} : tensor<3xbf16> -> tensor<5xbf16>
  return %n, %g : tensor<f32>, tensor<5xbf16>
}

// -----

// Tests that AdamW's moments may be BF16 (optimizer-state=bf16): written once
// after the types, and absent when they are the parameters' FP32.
// CHECK-LABEL: func.func @bf16_moments
// CHECK: infir2.adamw {{.*}} : tensor<8x4xf32> moments bf16
// CHECK: infir2.adamw_group {{.*}} : tensor<8x4xf32>, tensor<4xf32> moments bf16 -> tensor<8x4xbf16>
func.func @bf16_moments(%p: tensor<8x4xf32> {infir2.master_of = "w"}, %g: tensor<8x4xf32> {infir2.grad_of = "w"},
                        %m: tensor<8x4xbf16> {infir2.moment1_of = "w"}, %v: tensor<8x4xbf16> {infir2.moment2_of = "w"},
                        %b: tensor<4xf32>, %mb: tensor<4xbf16>, %s: tensor<f32>)
    -> (tensor<8x4xbf16> {infir2.moment1_of = "w"}) {
  %p2, %m2, %v2 = infir2.adamw %p, %g, %m, %v, %s, %s, %s, %s
      {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64}
      : tensor<8x4xf32> moments bf16
  %q:2, %gm:2, %gv:2, %w = infir2.adamw_group (%p, %b) grads (%g, %b) moments (%m, %mb) (%v, %mb) lr %s step %s scale %s norm %s
      {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, max_grad_norm = 1.0 : f64,
       weight_decays = array<f64: 0.1, 0.0>, working = array<i64: 0>} : tensor<8x4xf32>, tensor<4xf32> moments bf16 -> tensor<8x4xbf16>
  return %m2 : tensor<8x4xbf16>
}
