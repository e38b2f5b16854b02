// Tests interpreter results that are worked out by hand (constants only, so
// the inputs are fixed).
// RUN: infir2-run %s --entry cross_entropy | FileCheck %s --check-prefix=CE
// RUN: infir2-run %s --entry rms_norm | FileCheck %s --check-prefix=RMS
// RUN: infir2-run %s --entry attention | FileCheck %s --check-prefix=ATTN
// RUN: infir2-run %s --entry matmul | FileCheck %s --check-prefix=MM
// RUN: infir2-run %s --entry zero1_one_rank | FileCheck %s --check-prefix=ZERO

// Two equal logits: loss ln 2. The second token is ignored (-100), the third
// has mask weight 0, so the mean is over the first token only.
// CE: result #0: 0.69314718055994{{[0-9]*}}
func.func @cross_entropy() -> tensor<f32> {
  %logits = arith.constant dense<[[[0.0, 0.0], [5.0, -5.0], [1.0, 9.0]]]> : tensor<1x3x2xf32>
  %t = arith.constant dense<[[1, -100, 0]]> : tensor<1x3xi32>
  %m = arith.constant dense<[[1.0, 1.0, 0.0]]> : tensor<1x3xf32>
  %l = infir2.cross_entropy %logits, %t mask %m : tensor<1x3x2xf32>, tensor<1x3xi32>, tensor<1x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// [3, 4] with eps 0: rms = sqrt(12.5), so [3, 4] / 3.5355 * [1, 2]
// = [0.84852814, 2.2627417], sum 11 / sqrt(12.5) = 3.1112698372208092.
// RMS: result #0: shape [1, 2] sum 3.11126983722080{{[0-9]*}} {{.*}} first [0.848528137, 2.2627417]
func.func @rms_norm() -> tensor<1x2xf32> {
  %x = arith.constant dense<[[3.0, 4.0]]> : tensor<1x2xf32>
  %w = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %n = infir2.rms_norm %x, %w {epsilon = 1.0e-30 : f64} : tensor<1x2xf32>, tensor<2xf32>
  return %n : tensor<1x2xf32>
}

// Causal attention, one head of dim 2: token 0 sees only itself, so its
// output is v0 = [1, 2]; token 1 has equal scores for both keys (q1 = 0), so
// its output is the mean [2, 3].
// ATTN: result #0: shape [1, 2, 2] sum 8 {{.*}} first [1, 2, 2, 3]
func.func @attention() -> tensor<1x2x2xf32> {
  %q = arith.constant dense<[[[1.0, 0.0], [0.0, 0.0]]]> : tensor<1x2x2xf32>
  %k = arith.constant dense<[[[1.0, 1.0], [2.0, -1.0]]]> : tensor<1x2x2xf32>
  %v = arith.constant dense<[[[1.0, 2.0], [3.0, 4.0]]]> : tensor<1x2x2xf32>
  %o = infir2.attention %q, %k, %v {causal, num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 2 : i64}
      : tensor<1x2x2xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32> -> tensor<1x2x2xf32>
  return %o : tensor<1x2x2xf32>
}

// [[1, 2], [3, 4]] · [[5, 6], [7, 8]]ᵀ = [[17, 23], [39, 53]].
// MM: result #0: shape [2, 2] sum 132 {{.*}} first [17, 23, 39, 53]
func.func @matmul() -> tensor<2x2xf32> {
  %a = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = arith.constant dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %c = infir2.matmul %a, %b {transpose_rhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  return %c : tensor<2x2xf32>
}

// ZeRO-1 over one rank: the shard is the whole (3 rows of 2), the norm over
// "every rank" is the local one, sqrt(1+4+9+16+25+36) · 0.5 = 4.769696007,
// and the gather gives the rows back.
// ZERO: result #0: 4.76969600708472{{[0-9]*}}
// ZERO: result #1: shape [3, 2] sum 21 mean|x| 3.5 first [1, 2, 3, 4, ...]
func.func @zero1_one_rank() -> (tensor<f32>, tensor<3x2xf32>) {
  %g = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %h = arith.constant dense<0.5> : tensor<f32>
  %s = infir2.reduce_scatter %g {world_size = 1 : i64} : tensor<3x2xf32> -> tensor<3x2xf32>
  %n = infir2.global_norm %s scale %h {across_ranks} : tensor<3x2xf32>
  %w = infir2.all_gather %s {world_size = 1 : i64} : tensor<3x2xf32> -> tensor<3x2xf32>
  return %n, %w : tensor<f32>, tensor<3x2xf32>
}
