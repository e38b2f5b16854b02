// Tests every gradient rule against central finite differences through the
// FP64 reference interpreter. Each function computes loss = sum(op(params) * r)
// for a random input r, so that dL/dop is not trivial; all inputs are drawn from
// the printed seed. Tolerance: |g - fd| <= 1e-8 + 1e-5 * max(|g|, |fd|) with
// h = 1e-5 (FP64: truncation error ~h^2, rounding ~1e-16/h, both far below it).

// RUN: infir2-opt %s --infir2-autodiff="forward=embedding train-step=embedding_step" --infir2-autodiff="forward=matmul_nn train-step=matmul_nn_step" --infir2-autodiff="forward=matmul_nt train-step=matmul_nt_step" --infir2-autodiff="forward=matmul_tn train-step=matmul_tn_step" --infir2-autodiff="forward=matmul_tt train-step=matmul_tt_step" --infir2-autodiff="forward=matmul_batched train-step=matmul_batched_step" --infir2-autodiff="forward=matmul_shared train-step=matmul_shared_step" --infir2-autodiff="forward=matmul_shared_nn train-step=matmul_shared_nn_step" --infir2-autodiff="forward=rms_norm train-step=rms_norm_step" --infir2-autodiff="forward=rope train-step=rope_step" --infir2-autodiff="forward=rope_batched train-step=rope_batched_step" --infir2-autodiff="forward=attention train-step=attention_step" --infir2-autodiff="forward=attention_cross train-step=attention_cross_step" --infir2-autodiff="forward=attention_packed train-step=attention_packed_step" --infir2-autodiff="forward=silu train-step=silu_step" --infir2-autodiff="forward=swiglu train-step=swiglu_step" --infir2-autodiff="forward=add_broadcast train-step=add_broadcast_step" --infir2-autodiff="forward=mul_broadcast train-step=mul_broadcast_step" --infir2-autodiff="forward=reshape_transpose train-step=reshape_transpose_step" --infir2-autodiff="forward=convert_reduce train-step=convert_reduce_step" --infir2-autodiff="forward=matmul_acc train-step=matmul_acc_step" --infir2-autodiff="forward=reduce_acc train-step=reduce_acc_step" -o %t.mlir
// RUN: infir2-run %t.mlir --gradcheck --entry embedding --train-step embedding_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry matmul_nn --train-step matmul_nn_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry matmul_nt --train-step matmul_nt_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry matmul_tn --train-step matmul_tn_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry matmul_tt --train-step matmul_tt_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry matmul_batched --train-step matmul_batched_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry matmul_shared --train-step matmul_shared_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry matmul_shared_nn --train-step matmul_shared_nn_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry rms_norm --train-step rms_norm_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry rope --train-step rope_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry rope_batched --train-step rope_batched_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry attention --train-step attention_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry attention_cross --train-step attention_cross_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry attention_packed --train-step attention_packed_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry silu --train-step silu_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry swiglu --train-step swiglu_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry add_broadcast --train-step add_broadcast_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry mul_broadcast --train-step mul_broadcast_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry reshape_transpose --train-step reshape_transpose_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry convert_reduce --train-step convert_reduce_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry matmul_acc --train-step matmul_acc_step --seed 5 | FileCheck %s
// RUN: infir2-run %t.mlir --gradcheck --entry reduce_acc --train-step reduce_acc_step --seed 5 | FileCheck %s
// CHECK: gradcheck: {{[0-9]+}} parameters, {{[0-9]+}} coordinates: PASS
// CHECK-NOT: MISMATCH

// Tests embedding (gradient scatter-adds repeated ids).
func.func @embedding(%table: tensor<7x5xf32> {infir2.param = #infir2.param<"table", normal(std = 1.0)>}, %ids: tensor<3x4xi32>, %r: tensor<3x4x5xf32>) -> tensor<f32> {
  %e = infir2.embedding %table[%ids] : tensor<7x5xf32>[tensor<3x4xi32>] -> tensor<3x4x5xf32>
  %m = infir2.mul %e, %r : tensor<3x4x5xf32>, tensor<3x4x5xf32>
  %l = infir2.reduce_sum %m : tensor<3x4x5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests a matmul with an accumulator (its gradient passes to it unchanged).
func.func @matmul_acc(%a: tensor<4x3xf32> {infir2.param = #infir2.param<"a", normal(std = 1.0)>}, %b: tensor<4x5xf32> {infir2.param = #infir2.param<"b", normal(std = 1.0)>}, %c: tensor<3x5xf32> {infir2.param = #infir2.param<"c", normal(std = 1.0)>}, %r: tensor<3x5xf32>) -> tensor<f32> {
  %y = infir2.matmul %a, %b acc(%c : tensor<3x5xf32>) {transpose_lhs} : tensor<4x3xf32>, tensor<4x5xf32> -> tensor<3x5xf32>
  %m = infir2.mul %y, %r : tensor<3x5xf32>, tensor<3x5xf32>
  %l = infir2.reduce_sum %m : tensor<3x5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests a sum with an accumulator (its gradient passes to it unchanged; the
// input's is the result's, broadcast).
func.func @reduce_acc(%x: tensor<2x3x5xf32> {infir2.param = #infir2.param<"x", normal(std = 1.0)>}, %c: tensor<5xf32> {infir2.param = #infir2.param<"c", normal(std = 1.0)>}, %r: tensor<5xf32>) -> tensor<f32> {
  %y = infir2.reduce_sum %x acc(%c : tensor<5xf32>) : tensor<2x3x5xf32> -> tensor<5xf32>
  %m = infir2.mul %y, %r : tensor<5xf32>, tensor<5xf32>
  %l = infir2.reduce_sum %m : tensor<5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests a 2-D matmul, transpose_lhs=False, transpose_rhs=False.
func.func @matmul_nn(%a: tensor<3x4xf32> {infir2.param = #infir2.param<"a", normal(std = 1.0)>}, %b: tensor<4x5xf32> {infir2.param = #infir2.param<"b", normal(std = 1.0)>}, %r: tensor<3x5xf32>) -> tensor<f32> {
  %c = infir2.matmul %a, %b  : tensor<3x4xf32>, tensor<4x5xf32> -> tensor<3x5xf32>
  %m = infir2.mul %c, %r : tensor<3x5xf32>, tensor<3x5xf32>
  %l = infir2.reduce_sum %m : tensor<3x5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests a 2-D matmul, transpose_lhs=False, transpose_rhs=True.
func.func @matmul_nt(%a: tensor<3x4xf32> {infir2.param = #infir2.param<"a", normal(std = 1.0)>}, %b: tensor<5x4xf32> {infir2.param = #infir2.param<"b", normal(std = 1.0)>}, %r: tensor<3x5xf32>) -> tensor<f32> {
  %c = infir2.matmul %a, %b {transpose_rhs} : tensor<3x4xf32>, tensor<5x4xf32> -> tensor<3x5xf32>
  %m = infir2.mul %c, %r : tensor<3x5xf32>, tensor<3x5xf32>
  %l = infir2.reduce_sum %m : tensor<3x5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests a 2-D matmul, transpose_lhs=True, transpose_rhs=False.
func.func @matmul_tn(%a: tensor<4x3xf32> {infir2.param = #infir2.param<"a", normal(std = 1.0)>}, %b: tensor<4x5xf32> {infir2.param = #infir2.param<"b", normal(std = 1.0)>}, %r: tensor<3x5xf32>) -> tensor<f32> {
  %c = infir2.matmul %a, %b {transpose_lhs} : tensor<4x3xf32>, tensor<4x5xf32> -> tensor<3x5xf32>
  %m = infir2.mul %c, %r : tensor<3x5xf32>, tensor<3x5xf32>
  %l = infir2.reduce_sum %m : tensor<3x5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests a 2-D matmul, transpose_lhs=True, transpose_rhs=True.
func.func @matmul_tt(%a: tensor<4x3xf32> {infir2.param = #infir2.param<"a", normal(std = 1.0)>}, %b: tensor<5x4xf32> {infir2.param = #infir2.param<"b", normal(std = 1.0)>}, %r: tensor<3x5xf32>) -> tensor<f32> {
  %c = infir2.matmul %a, %b {transpose_lhs, transpose_rhs} : tensor<4x3xf32>, tensor<5x4xf32> -> tensor<3x5xf32>
  %m = infir2.mul %c, %r : tensor<3x5xf32>, tensor<3x5xf32>
  %l = infir2.reduce_sum %m : tensor<3x5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests a batched matmul with transposed rhs.
func.func @matmul_batched(%a: tensor<2x3x4xf32> {infir2.param = #infir2.param<"a", normal(std = 1.0)>}, %b: tensor<2x5x4xf32> {infir2.param = #infir2.param<"b", normal(std = 1.0)>}, %r: tensor<2x3x5xf32>) -> tensor<f32> {
  %c = infir2.matmul %a, %b {transpose_rhs} : tensor<2x3x4xf32>, tensor<2x5x4xf32> -> tensor<2x3x5xf32>
  %m = infir2.mul %c, %r : tensor<2x3x5xf32>, tensor<2x3x5xf32>
  %l = infir2.reduce_sum %m : tensor<2x3x5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests a linear layer: batched lhs, shared rank-2 weight.
func.func @matmul_shared(%x: tensor<2x3x4xf32> {infir2.param = #infir2.param<"x", normal(std = 1.0)>}, %w: tensor<5x4xf32> {infir2.param = #infir2.param<"w", normal(std = 1.0)>}, %r: tensor<2x3x5xf32>) -> tensor<f32> {
  %c = infir2.matmul %x, %w {transpose_rhs} : tensor<2x3x4xf32>, tensor<5x4xf32> -> tensor<2x3x5xf32>
  %m = infir2.mul %c, %r : tensor<2x3x5xf32>, tensor<2x3x5xf32>
  %l = infir2.reduce_sum %m : tensor<2x3x5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests batched lhs, shared rank-2 rhs, no transposes.
func.func @matmul_shared_nn(%x: tensor<2x3x4xf32> {infir2.param = #infir2.param<"x", normal(std = 1.0)>}, %w: tensor<4x5xf32> {infir2.param = #infir2.param<"w", normal(std = 1.0)>}, %r: tensor<2x3x5xf32>) -> tensor<f32> {
  %c = infir2.matmul %x, %w : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
  %m = infir2.mul %c, %r : tensor<2x3x5xf32>, tensor<2x3x5xf32>
  %l = infir2.reduce_sum %m : tensor<2x3x5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests rms_norm (input and weight).
func.func @rms_norm(%x: tensor<3x6xf32> {infir2.param = #infir2.param<"x", normal(std = 1.0)>}, %w: tensor<6xf32> {infir2.param = #infir2.param<"w", normal(std = 1.0)>}, %r: tensor<3x6xf32>) -> tensor<f32> {
  %n = infir2.rms_norm %x, %w {epsilon = 1.0e-05 : f64} : tensor<3x6xf32>, tensor<6xf32>
  %m = infir2.mul %n, %r : tensor<3x6xf32>, tensor<3x6xf32>
  %l = infir2.reduce_sum %m : tensor<3x6xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests rope with positions shared by the batch.
func.func @rope(%x: tensor<2x5x8xf32> {infir2.param = #infir2.param<"x", normal(std = 1.0)>}, %pos: tensor<5xi32>, %r: tensor<2x5x8xf32>) -> tensor<f32> {
  %y = infir2.rope %x, %pos {head_dim = 4 : i64, theta = 100.0 : f64} : tensor<2x5x8xf32>, tensor<5xi32>
  %m = infir2.mul %y, %r : tensor<2x5x8xf32>, tensor<2x5x8xf32>
  %l = infir2.reduce_sum %m : tensor<2x5x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests rope with per-sequence positions.
func.func @rope_batched(%x: tensor<2x5x8xf32> {infir2.param = #infir2.param<"x", normal(std = 1.0)>}, %pos: tensor<2x5xi32>, %r: tensor<2x5x8xf32>) -> tensor<f32> {
  %y = infir2.rope %x, %pos {head_dim = 8 : i64, theta = 10.0 : f64} : tensor<2x5x8xf32>, tensor<2x5xi32>
  %m = infir2.mul %y, %r : tensor<2x5x8xf32>, tensor<2x5x8xf32>
  %l = infir2.reduce_sum %m : tensor<2x5x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests causal attention over packed segments (runs of 1 to 3 tokens).
func.func @attention_packed(%q: tensor<2x6x8xf32> {infir2.param = #infir2.param<"q", normal(std = 1.0)>}, %k: tensor<2x6x4xf32> {infir2.param = #infir2.param<"k", normal(std = 1.0)>}, %v: tensor<2x6x4xf32> {infir2.param = #infir2.param<"v", normal(std = 1.0)>}, %seg: tensor<2x6xi32>, %r: tensor<2x6x8xf32>) -> tensor<f32> {
  %o = infir2.attention %q, %k, %v segments %seg {causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 2 : i64} : tensor<2x6x8xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>, tensor<2x6xi32> -> tensor<2x6x8xf32>
  %m = infir2.mul %o, %r : tensor<2x6x8xf32>, tensor<2x6x8xf32>
  %l = infir2.reduce_sum %m : tensor<2x6x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests causal grouped-query attention (4 query heads, 2 kv heads).
func.func @attention(%q: tensor<2x5x8xf32> {infir2.param = #infir2.param<"q", normal(std = 1.0)>}, %k: tensor<2x5x4xf32> {infir2.param = #infir2.param<"k", normal(std = 1.0)>}, %v: tensor<2x5x4xf32> {infir2.param = #infir2.param<"v", normal(std = 1.0)>}, %r: tensor<2x5x8xf32>) -> tensor<f32> {
  %o = infir2.attention %q, %k, %v {causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 2 : i64} : tensor<2x5x8xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32> -> tensor<2x5x8xf32>
  %m = infir2.mul %o, %r : tensor<2x5x8xf32>, tensor<2x5x8xf32>
  %l = infir2.reduce_sum %m : tensor<2x5x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests non-causal attention over a longer key sequence with an explicit scale.
func.func @attention_cross(%q: tensor<1x3x6xf32> {infir2.param = #infir2.param<"q", normal(std = 1.0)>}, %k: tensor<1x4x6xf32> {infir2.param = #infir2.param<"k", normal(std = 1.0)>}, %v: tensor<1x4x6xf32> {infir2.param = #infir2.param<"v", normal(std = 1.0)>}, %r: tensor<1x3x6xf32>) -> tensor<f32> {
  %o = infir2.attention %q, %k, %v {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 3 : i64, scale = 0.7 : f64} : tensor<1x3x6xf32>, tensor<1x4x6xf32>, tensor<1x4x6xf32> -> tensor<1x3x6xf32>
  %m = infir2.mul %o, %r : tensor<1x3x6xf32>, tensor<1x3x6xf32>
  %l = infir2.reduce_sum %m : tensor<1x3x6xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests silu.
func.func @silu(%x: tensor<4x3xf32> {infir2.param = #infir2.param<"x", normal(std = 1.0)>}, %r: tensor<4x3xf32>) -> tensor<f32> {
  %y = infir2.silu %x : tensor<4x3xf32>
  %m = infir2.mul %y, %r : tensor<4x3xf32>, tensor<4x3xf32>
  %l = infir2.reduce_sum %m : tensor<4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests swiglu (gate and up).
func.func @swiglu(%g: tensor<4x3xf32> {infir2.param = #infir2.param<"g", normal(std = 1.0)>}, %u: tensor<4x3xf32> {infir2.param = #infir2.param<"u", normal(std = 1.0)>}, %r: tensor<4x3xf32>) -> tensor<f32> {
  %y = infir2.swiglu %g, %u : tensor<4x3xf32>
  %m = infir2.mul %y, %r : tensor<4x3xf32>, tensor<4x3xf32>
  %l = infir2.reduce_sum %m : tensor<4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests add with a broadcast bias (the bias gradient sums over tokens).
func.func @add_broadcast(%x: tensor<2x3x4xf32> {infir2.param = #infir2.param<"x", normal(std = 1.0)>}, %b: tensor<4xf32> {infir2.param = #infir2.param<"b", normal(std = 1.0)>}, %r: tensor<2x3x4xf32>) -> tensor<f32> {
  %y = infir2.add %x, %b : tensor<2x3x4xf32>, tensor<4xf32>
  %m = infir2.mul %y, %r : tensor<2x3x4xf32>, tensor<2x3x4xf32>
  %l = infir2.reduce_sum %m : tensor<2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests mul with a broadcast scale, and the same value used twice.
func.func @mul_broadcast(%x: tensor<2x3x4xf32> {infir2.param = #infir2.param<"x", normal(std = 1.0)>}, %s: tensor<3x4xf32> {infir2.param = #infir2.param<"s", normal(std = 1.0)>}, %r: tensor<2x3x4xf32>) -> tensor<f32> {
  %y0 = infir2.mul %x, %s : tensor<2x3x4xf32>, tensor<3x4xf32>
  %y = infir2.add %y0, %x : tensor<2x3x4xf32>, tensor<2x3x4xf32>
  %m = infir2.mul %y, %r : tensor<2x3x4xf32>, tensor<2x3x4xf32>
  %l = infir2.reduce_sum %m : tensor<2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests reshape and transpose.
func.func @reshape_transpose(%x: tensor<2x3x4xf32> {infir2.param = #infir2.param<"x", normal(std = 1.0)>}, %r: tensor<8x3xf32>) -> tensor<f32> {
  %t = infir2.transpose %x [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %y = infir2.reshape %t : tensor<4x2x3xf32> -> tensor<8x3xf32>
  %m = infir2.mul %y, %r : tensor<8x3xf32>, tensor<8x3xf32>
  %l = infir2.reduce_sum %m : tensor<8x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests convert through bf16 and reduce_sum.
func.func @convert_reduce(%x: tensor<2x3xf32> {infir2.param = #infir2.param<"x", normal(std = 1.0)>}, %r: tensor<2x3xf32>) -> tensor<f32> {
  %b = infir2.convert %x : tensor<2x3xf32> -> tensor<2x3xbf16>
  %f = infir2.convert %b : tensor<2x3xbf16> -> tensor<2x3xf32>
  %s = infir2.reduce_sum %f : tensor<2x3xf32> -> tensor<3xf32>
  %y = infir2.mul %f, %s : tensor<2x3xf32>, tensor<3xf32>
  %m = infir2.mul %y, %r : tensor<2x3xf32>, tensor<2x3xf32>
  %l = infir2.reduce_sum %m : tensor<2x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Tests cross_entropy with a loss mask and an ignored target.
// RUN: infir2-opt %s --infir2-autodiff="forward=cross_entropy train-step=ce_step" -o %t.ce.mlir
// RUN: infir2-run %t.ce.mlir --gradcheck --entry cross_entropy --train-step ce_step --seed 9 | FileCheck %s
func.func @cross_entropy(%logits: tensor<2x3x7xf32> {infir2.param = #infir2.param<"logits", normal(std = 2.0)>},
                         %t: tensor<2x3xi32>, %m: tensor<2x3xf32>) -> tensor<f32> {
  %l = infir2.cross_entropy %logits, %t mask %m {ignore_index = 3 : i64} : tensor<2x3x7xf32>, tensor<2x3xi32>, tensor<2x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
