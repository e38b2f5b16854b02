// RUN: infir2-opt %s --split-input-file --verify-diagnostics

// Tests that an embedding table must be a matrix.
func.func @embedding_table_rank(%t: tensor<256xbf16>, %ids: tensor<4xi32>) {
  // expected-error @+1 {{expects 'table' of rank 2 ([vocab, dim]), got shape [256]}}
  %0 = infir2.embedding %t[%ids] : tensor<256xbf16>[tensor<4xi32>] -> tensor<4xbf16>
  return
}

// -----

// Tests that the embedding result is the ids' shape followed by the row size.
func.func @embedding_result_shape(%t: tensor<256x64xbf16>, %ids: tensor<2x32xi32>) {
  // expected-error @+1 {{expects 'result' of shape [2, 32, 64] (the ids' shape followed by the table's row size), got [2, 32, 32]}}
  %0 = infir2.embedding %t[%ids] : tensor<256x64xbf16>[tensor<2x32xi32>] -> tensor<2x32x32xbf16>
  return
}

// -----

// Tests that the embedding result has the table's element type.
func.func @embedding_result_type(%t: tensor<256x64xbf16>, %ids: tensor<2x32xi32>) {
  // expected-error @+1 {{expects 'result' to have the element type of 'table' ('bf16'), got 'f32'}}
  %0 = infir2.embedding %t[%ids] : tensor<256x64xbf16>[tensor<2x32xi32>] -> tensor<2x32x64xf32>
  return
}

// -----

// Tests that token ids must be integers.
func.func @embedding_float_ids(%t: tensor<256x64xbf16>, %ids: tensor<2x32xf32>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = infir2.embedding %t[%ids] : tensor<256x64xbf16>[tensor<2x32xf32>] -> tensor<2x32x64xbf16>
  return
}

// -----

// Tests that matmul operands are at least matrices.
func.func @matmul_lhs_rank(%a: tensor<64xf32>, %b: tensor<64x8xf32>) {
  // expected-error @+1 {{expects 'lhs' of rank at least 2, got shape [64]}}
  %0 = infir2.matmul %a, %b : tensor<64xf32>, tensor<64x8xf32> -> tensor<8xf32>
  return
}

// -----

// Tests that rhs is either a shared matrix or batched like lhs.
func.func @matmul_rhs_rank(%a: tensor<2x3x4x8xf32>, %b: tensor<3x8x4xf32>) {
  // expected-error @+1 {{expects 'rhs' of rank 2 or of the rank of 'lhs' (4), got shape [3, 8, 4]}}
  %0 = infir2.matmul %a, %b : tensor<2x3x4x8xf32>, tensor<3x8x4xf32> -> tensor<2x3x4x4xf32>
  return
}

// -----

// Tests that batch dimensions must agree.
func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x4xf32>) {
  // expected-error @+1 {{expects equal batch dimensions, got 'lhs' [2, 4, 8] and 'rhs' [3, 8, 4]}}
  %0 = infir2.matmul %a, %b : tensor<2x4x8xf32>, tensor<3x8x4xf32> -> tensor<2x4x4xf32>
  return
}

// -----

// Tests that the contraction dimensions must agree, after the transposes.
func.func @matmul_contraction(%x: tensor<2x32x64xbf16>, %w: tensor<64x176xbf16>) {
  // expected-error @+1 {{expects the contraction dimensions to match, got 64 in 'lhs' [2, 32, 64] and 176 in 'rhs' [64, 176]}}
  %0 = infir2.matmul %x, %w {transpose_rhs} : tensor<2x32x64xbf16>, tensor<64x176xbf16> -> tensor<2x32x64xbf16>
  return
}

// -----

// Tests that the result shape follows from the operands.
func.func @matmul_result_shape(%x: tensor<2x32x64xbf16>, %w: tensor<176x64xbf16>) {
  // expected-error @+1 {{expects 'result' of shape [2, 32, 176] (batch dimensions followed by M and N), got [2, 176, 32]}}
  %0 = infir2.matmul %x, %w {transpose_rhs} : tensor<2x32x64xbf16>, tensor<176x64xbf16> -> tensor<2x176x32xbf16>
  return
}

// -----

// Tests that matmul operands share one element type.
func.func @matmul_mixed_operands(%x: tensor<4x8xbf16>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{expects 'rhs' to have the element type of 'lhs' ('bf16'), got 'f32'}}
  %0 = infir2.matmul %x, %w : tensor<4x8xbf16>, tensor<8x4xf32> -> tensor<4x4xf32>
  return
}

// -----

// Tests that the result type is the operands' or f32, never narrower.
func.func @matmul_result_type(%x: tensor<4x8xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{expects the result element type to be the operands' ('f32') or f32, got 'bf16'}}
  %0 = infir2.matmul %x, %w : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xbf16>
  return
}

// -----

// Tests that an accumulator has the result's type.
func.func @matmul_acc_type(%x: tensor<4x8xbf16>, %w: tensor<8x4xbf16>, %acc: tensor<4x8xf32>) {
  // expected-error @+1 {{expects the accumulator 'acc' to have the result's type 'tensor<4x4xf32>', got 'tensor<4x8xf32>'}}
  %0 = infir2.matmul %x, %w acc(%acc : tensor<4x8xf32>) : tensor<4x8xbf16>, tensor<8x4xbf16> -> tensor<4x4xf32>
  return
}

// -----

// Tests that a GEMM accumulates in f32 or bf16 only.
func.func @matmul_acc_f16(%x: tensor<4x8xf16>, %w: tensor<8x4xf16>, %acc: tensor<4x4xf16>) {
  // expected-error @+1 {{accumulates in f32 or bf16 only: expects such a result with 'acc', got 'f16'}}
  %0 = infir2.matmul %x, %w acc(%acc : tensor<4x4xf16>) : tensor<4x8xf16>, tensor<8x4xf16> -> tensor<4x4xf16>
  return
}

// -----

// Tests that silu keeps its operand's type (generic form: the custom form
// cannot even spell a mismatch).
func.func @silu_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "infir2.silu"(%x) : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  return
}

// -----

// Tests that swiglu's gate and up projections have one type.
func.func @swiglu_type(%g: tensor<4x8xf32>, %u: tensor<4x16xf32>) {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = "infir2.swiglu"(%g, %u) : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that rms_norm returns the input's type.
func.func @rms_norm_result_type(%x: tensor<2x64xbf16>, %w: tensor<64xbf16>) {
  // expected-error @+1 {{failed to verify that all of {input, result} have same type}}
  %0 = "infir2.rms_norm"(%x, %w) {epsilon = 1.0e-6 : f64} : (tensor<2x64xbf16>, tensor<64xbf16>) -> tensor<2x64xf32>
  return
}

// -----

// Tests that rope returns the input's type.
func.func @rope_result_type(%x: tensor<2x32x64xbf16>, %p: tensor<32xi32>) {
  // expected-error @+1 {{failed to verify that all of {input, result} have same type}}
  %0 = "infir2.rope"(%x, %p) {head_dim = 16 : i64, theta = 1.0e4 : f64} : (tensor<2x32x64xbf16>, tensor<32xi32>) -> tensor<2x32x32xbf16>
  return
}

// -----

// Tests that add returns the type of lhs.
func.func @add_result_type(%x: tensor<2x64xbf16>, %b: tensor<64xbf16>) {
  // expected-error @+1 {{failed to verify that all of {lhs, result} have same type}}
  %0 = "infir2.add"(%x, %b) : (tensor<2x64xbf16>, tensor<64xbf16>) -> tensor<64xbf16>
  return
}

// -----

// Tests that rms_norm needs a dimension to normalize.
func.func @rms_norm_rank(%x: tensor<bf16>, %w: tensor<1xbf16>) {
  // expected-error @+1 {{expects 'input' of rank at least 1}}
  %0 = infir2.rms_norm %x, %w {epsilon = 1.0e-6 : f64} : tensor<bf16>, tensor<1xbf16>
  return
}

// -----

// Tests that the norm weight covers the last dimension.
func.func @rms_norm_weight_shape(%x: tensor<2x32x64xbf16>, %w: tensor<32xbf16>) {
  // expected-error @+1 {{expects 'weight' of shape [64] (the last dimension of 'input'), got [32]}}
  %0 = infir2.rms_norm %x, %w {epsilon = 1.0e-6 : f64} : tensor<2x32x64xbf16>, tensor<32xbf16>
  return
}

// -----

// Tests that the norm weight has the input's element type.
func.func @rms_norm_weight_type(%x: tensor<2x32x64xbf16>, %w: tensor<64xf32>) {
  // expected-error @+1 {{expects 'weight' to have the element type of 'input' ('bf16'), got 'f32'}}
  %0 = infir2.rms_norm %x, %w {epsilon = 1.0e-6 : f64} : tensor<2x32x64xbf16>, tensor<64xf32>
  return
}

// -----

// Tests that epsilon must be positive.
func.func @rms_norm_epsilon(%x: tensor<2x32x64xbf16>, %w: tensor<64xbf16>) {
  // expected-error @+1 {{attribute 'epsilon' failed to satisfy constraint: 64-bit float attribute whose value is positive}}
  %0 = infir2.rms_norm %x, %w {epsilon = 0.0 : f64} : tensor<2x32x64xbf16>, tensor<64xbf16>
  return
}

// -----

// Tests that rope needs a sequence dimension.
func.func @rope_rank(%x: tensor<64xbf16>, %p: tensor<64xi32>) {
  // expected-error @+1 {{expects 'input' of rank at least 2 ([..., seq, heads * head_dim]), got shape [64]}}
  %0 = infir2.rope %x, %p {head_dim = 16 : i64, theta = 1.0e4 : f64} : tensor<64xbf16>, tensor<64xi32>
  return
}

// -----

// Tests that rope rotates pairs, so head_dim is even.
func.func @rope_odd_head_dim(%x: tensor<2x32x63xbf16>, %p: tensor<32xi32>) {
  // expected-error @+1 {{expects an even head_dim (dimensions rotate in pairs), got 21}}
  %0 = infir2.rope %x, %p {head_dim = 21 : i64, theta = 1.0e4 : f64} : tensor<2x32x63xbf16>, tensor<32xi32>
  return
}

// -----

// Tests that the input packs whole heads.
func.func @rope_partial_head(%x: tensor<2x32x72xbf16>, %p: tensor<32xi32>) {
  // expected-error @+1 {{expects the last dimension of 'input' (72) to be a multiple of head_dim (16)}}
  %0 = infir2.rope %x, %p {head_dim = 16 : i64, theta = 1.0e4 : f64} : tensor<2x32x72xbf16>, tensor<32xi32>
  return
}

// -----

// Tests that there is one position per token.
func.func @rope_positions(%x: tensor<2x32x64xbf16>, %p: tensor<16xi32>) {
  // expected-error @+1 {{expects 'positions' of shape [32] or [2, 32] (the input's shape without its last dimension), got [16]}}
  %0 = infir2.rope %x, %p {head_dim = 16 : i64, theta = 1.0e4 : f64} : tensor<2x32x64xbf16>, tensor<16xi32>
  return
}

// -----

// Tests that head_dim must be positive.
func.func @rope_head_dim_positive(%x: tensor<2x32x64xbf16>, %p: tensor<32xi32>) {
  // expected-error @+1 {{attribute 'head_dim' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0 = infir2.rope %x, %p {head_dim = 0 : i64, theta = 1.0e4 : f64} : tensor<2x32x64xbf16>, tensor<32xi32>
  return
}

// -----

// Tests that attention operands are [batch, seq, heads * head_dim].
func.func @attention_rank(%q: tensor<2x32x4x16xbf16>, %k: tensor<2x32x32xbf16>) {
  // expected-error @+1 {{expects 'query' of rank 3 ([batch, seq, heads * head_dim]), got shape [2, 32, 4, 16]}}
  %0 = infir2.attention %q, %k, %k {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : tensor<2x32x4x16xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16> -> tensor<2x32x4x16xbf16>
  return
}

// -----

// Tests that attention operands share one element type.
func.func @attention_types(%q: tensor<2x32x64xbf16>, %k: tensor<2x32x32xf32>) {
  // expected-error @+1 {{expects 'key' to have the element type of 'query' ('bf16'), got 'f32'}}
  %0 = infir2.attention %q, %k, %k {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : tensor<2x32x64xbf16>, tensor<2x32x32xf32>, tensor<2x32x32xf32> -> tensor<2x32x64xbf16>
  return
}

// -----

// Tests that query heads divide evenly into key/value groups.
func.func @attention_groups(%q: tensor<2x32x48xbf16>, %k: tensor<2x32x32xbf16>) {
  // expected-error @+1 {{expects num_heads (3) to be a multiple of num_kv_heads (2)}}
  %0 = infir2.attention %q, %k, %k {num_heads = 3 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : tensor<2x32x48xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16> -> tensor<2x32x48xbf16>
  return
}

// -----

// Tests that the query packs num_heads heads.
func.func @attention_query_width(%q: tensor<2x32x64xbf16>, %k: tensor<2x32x32xbf16>) {
  // expected-error @+1 {{expects the last dimension of 'query' (64) to be num_heads * head_dim (128)}}
  %0 = infir2.attention %q, %k, %k {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16> -> tensor<2x32x64xbf16>
  return
}

// -----

// Tests that the key packs num_kv_heads heads.
func.func @attention_key_width(%q: tensor<2x32x64xbf16>, %k: tensor<2x32x64xbf16>) {
  // expected-error @+1 {{expects the last dimension of 'key' (64) to be num_kv_heads * head_dim (32)}}
  %0 = infir2.attention %q, %k, %k {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : tensor<2x32x64xbf16>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16> -> tensor<2x32x64xbf16>
  return
}

// -----

// Tests that query and key share the batch size.
func.func @attention_batch(%q: tensor<2x32x64xbf16>, %k: tensor<3x32x32xbf16>) {
  // expected-error @+1 {{expects 'key' to have the batch size of 'query' (2), got 3}}
  %0 = infir2.attention %q, %k, %k {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : tensor<2x32x64xbf16>, tensor<3x32x32xbf16>, tensor<3x32x32xbf16> -> tensor<2x32x64xbf16>
  return
}

// -----

// Tests that value has the key's shape.
func.func @attention_value(%q: tensor<2x32x64xbf16>, %k: tensor<2x32x32xbf16>, %v: tensor<2x16x32xbf16>) {
  // expected-error @+1 {{expects 'value' of shape [2, 32, 32] (the shape of 'key'), got [2, 16, 32]}}
  %0 = infir2.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x16x32xbf16> -> tensor<2x32x64xbf16>
  return
}

// -----

// Tests that a causal mask needs equal query and key lengths.
func.func @attention_causal(%q: tensor<2x32x64xbf16>, %k: tensor<2x16x32xbf16>) {
  // expected-error @+1 {{expects equal query and key lengths with a causal mask, got 32 and 16}}
  %0 = infir2.attention %q, %k, %k {causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : tensor<2x32x64xbf16>, tensor<2x16x32xbf16>, tensor<2x16x32xbf16> -> tensor<2x32x64xbf16>
  return
}

// -----

// Tests that the attention result is shaped like the query.
func.func @attention_result(%q: tensor<2x32x64xbf16>, %k: tensor<2x32x32xbf16>) {
  // expected-error @+1 {{expects the type of 'result' to be the type of 'query' ('tensor<2x32x64xbf16>'), got 'tensor<2x32x64xf32>'}}
  %0 = infir2.attention %q, %k, %k {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16> -> tensor<2x32x64xf32>
  return
}

// -----

// Tests that the attention scale must be positive.
func.func @attention_scale(%q: tensor<2x32x64xbf16>, %k: tensor<2x32x32xbf16>) {
  // expected-error @+1 {{attribute 'scale' failed to satisfy constraint: 64-bit float attribute whose value is positive}}
  %0 = infir2.attention %q, %k, %k {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = -1.0 : f64}
      : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16> -> tensor<2x32x64xbf16>
  return
}

// -----

// Tests that segment ids give each token of the batch one.
func.func @attention_segments_shape(%q: tensor<2x32x64xbf16>, %k: tensor<2x32x32xbf16>, %seg: tensor<32xi32>) {
  // expected-error @+1 {{expects 'segments' of shape [2, 32] (batch, seq), got [32]}}
  %0 = infir2.attention %q, %k, %k segments %seg {causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>, tensor<32xi32> -> tensor<2x32x64xbf16>
  return
}

// -----

// Tests that segments need queries and keys of one sequence.
func.func @attention_segments_cross(%q: tensor<2x32x64xbf16>, %k: tensor<2x16x32xbf16>, %seg: tensor<2x32xi32>) {
  // expected-error @+1 {{expects equal query and key lengths with segments, got 32 and 16}}
  %0 = infir2.attention %q, %k, %k segments %seg {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : tensor<2x32x64xbf16>, tensor<2x16x32xbf16>, tensor<2x16x32xbf16>, tensor<2x32xi32> -> tensor<2x32x64xbf16>
  return
}

// -----

// Tests that segment ids are integers.
func.func @attention_segments_type(%q: tensor<2x32x64xbf16>, %k: tensor<2x32x32xbf16>, %seg: tensor<2x32xf32>) {
  // expected-error @+1 {{operand #3 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = infir2.attention %q, %k, %k segments %seg {causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : tensor<2x32x64xbf16>, tensor<2x32x32xbf16>, tensor<2x32x32xbf16>, tensor<2x32xf32> -> tensor<2x32x64xbf16>
  return
}
