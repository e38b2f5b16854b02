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

// Tests that add broadcasts only over leading dimensions.
func.func @add_broadcast(%x: tensor<2x32x64xbf16>, %b: tensor<32xbf16>) {
  // expected-error @+1 {{expects the shape of 'rhs' [32] to equal the shape of 'lhs' [2, 32, 64] or a suffix of it}}
  %0 = infir2.add %x, %b : tensor<2x32x64xbf16>, tensor<32xbf16>
  return
}

// -----

// Tests that mul operands share one element type.
func.func @mul_types(%x: tensor<2x32x64xbf16>, %b: tensor<64xf32>) {
  // expected-error @+1 {{expects 'rhs' to have the element type of 'lhs' ('bf16'), got 'f32'}}
  %0 = infir2.mul %x, %b : tensor<2x32x64xbf16>, tensor<64xf32>
  return
}

// -----

// Tests that logits have a vocabulary dimension after the tokens.
func.func @cross_entropy_rank(%l: tensor<256xf32>, %t: tensor<i32>) {
  // expected-error @+1 {{expects 'logits' of rank at least 2 ([..., vocab]), got shape [256]}}
  %0 = infir2.cross_entropy %l, %t : tensor<256xf32>, tensor<i32> -> tensor<f32>
  return
}

// -----

// Tests that there is one target per token.
func.func @cross_entropy_targets(%l: tensor<2x32x256xf32>, %t: tensor<2x31xi32>) {
  // expected-error @+1 {{expects 'targets' of shape [2, 32] (the shape of 'logits' without the vocabulary), got [2, 31]}}
  %0 = infir2.cross_entropy %l, %t : tensor<2x32x256xf32>, tensor<2x31xi32> -> tensor<f32>
  return
}

// -----

// Tests that the loss mask has the targets' shape.
func.func @cross_entropy_mask(%l: tensor<2x32x256xf32>, %t: tensor<2x32xi32>, %m: tensor<32xf32>) {
  // expected-error @+1 {{expects 'loss_mask' of shape [2, 32] (the shape of 'targets'), got [32]}}
  %0 = infir2.cross_entropy %l, %t mask %m : tensor<2x32x256xf32>, tensor<2x32xi32>, tensor<32xf32> -> tensor<f32>
  return
}

// -----

// Tests that the loss is a scalar f32.
func.func @cross_entropy_result(%l: tensor<2x32x256xf32>, %t: tensor<2x32xi32>) {
  // expected-error @+1 {{result #0 must be 0D tensor of 32-bit float values}}
  %0 = infir2.cross_entropy %l, %t : tensor<2x32x256xf32>, tensor<2x32xi32> -> tensor<2x32xf32>
  return
}

// -----

// Tests that reshape keeps the number of elements.
func.func @reshape_count(%x: tensor<2x32x64xbf16>) {
  // expected-error @+1 {{expects the result to have as many elements as 'input' (4096), got 2048}}
  %0 = infir2.reshape %x : tensor<2x32x64xbf16> -> tensor<32x64xbf16>
  return
}

// -----

// Tests that reshape keeps the element type.
func.func @reshape_type(%x: tensor<2x32x64xbf16>) {
  // expected-error @+1 {{expects 'result' to have the element type of 'input' ('bf16'), got 'f32'}}
  %0 = infir2.reshape %x : tensor<2x32x64xbf16> -> tensor<64x64xf32>
  return
}

// -----

// Tests that a transpose permutes every dimension.
func.func @transpose_length(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{expects a permutation of 3 dimensions, got 2}}
  %0 = infir2.transpose %x [1, 0] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  return
}

// -----

// Tests that the permutation names each dimension once.
func.func @transpose_not_permutation(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{expects 'permutation' to be a permutation of [0, 3), got [0, 0, 2]}}
  %0 = infir2.transpose %x [0, 0, 2] : tensor<2x3x4xf32> -> tensor<2x2x4xf32>
  return
}

// -----

// Tests that the result shape is the permuted input shape.
func.func @transpose_result(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{expects 'result' of shape [4, 2, 3] (the input's shape permuted), got [4, 3, 2]}}
  %0 = infir2.transpose %x [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
  return
}

// -----

// Tests that transpose keeps the element type.
func.func @transpose_type(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{expects 'result' to have the element type of 'input' ('f32'), got 'bf16'}}
  %0 = infir2.transpose %x [1, 0] : tensor<2x3xf32> -> tensor<3x2xbf16>
  return
}

// -----

// Tests that model tensors are high precision: FP8 appears only through fp8 ops.
func.func @fp8_operand(%x: tensor<4x8xf8E4M3FN>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of bfloat16 type or 16-bit float or 32-bit float or 64-bit float values}}
  %0 = infir2.silu %x : tensor<4x8xf8E4M3FN>
  return
}

// -----

// Tests that only infir2.param is a known argument attribute.
// expected-error @+1 {{unknown argument attribute 'infir2.weight' on argument #0}}
func.func @unknown_arg_attr(%w: tensor<8xf32> {infir2.weight}) {
  return
}

// -----

// Tests that infir2.param holds a #infir2.param.
// expected-error @+1 {{'infir2.param' on argument #0 must be a #infir2.param, got "w"}}
func.func @param_not_attr(%w: tensor<8xf32> {infir2.param = "w"}) {
  return
}

// -----

// Tests that parameters are float tensors.
// expected-error @+1 {{parameter 'ids' (argument #0) must be a statically shaped tensor of bf16, f16, f32 or f64, got 'tensor<8xi32>'}}
func.func @param_type(%w: tensor<8xi32> {infir2.param = #infir2.param<"ids", zeros>}) {
  return
}

// -----

// Tests that parameter names are unique, as checkpoint names must be.
// expected-error @+1 {{parameter name 'model.norm.weight' of argument #1 is already used by argument #0}}
func.func @param_duplicate(%a: tensor<8xf32> {infir2.param = #infir2.param<"model.norm.weight", ones>},
                           %b: tensor<8xf32> {infir2.param = #infir2.param<"model.norm.weight", ones>}) {
  return
}

// -----

// Tests that a normal initialization has a positive std.
// expected-error @+1 {{normal initialization of 'w' needs a positive, finite std, got 0}}
func.func @param_std(%w: tensor<8xf32> {infir2.param = #infir2.param<"w", normal(std = 0.0)>}) {
  return
}

// -----

// Tests that a parameter has a name.
// expected-error @+1 {{parameter name must not be empty}}
func.func @param_empty_name(%w: tensor<8xf32> {infir2.param = #infir2.param<"", ones>}) {
  return
}

// -----

// Tests that the initialization rule is one of the known ones.
// expected-error @+1 {{unknown initialization rule 'xavier' (expected zeros, ones or normal)}}
func.func @param_rule(%w: tensor<8xf32> {infir2.param = #infir2.param<"w", xavier>}) {
  return
}

// -----

// Tests that infir2 attributes are not allowed on function results.
// expected-error @+1 {{'infir2.param' is not allowed on result #0 (parameters are function arguments)}}
func.func private @param_on_result() -> (tensor<8xf32> {infir2.param = #infir2.param<"w", ones>})

// -----

// Tests that unknown infir2 attributes on operations are reported.
func.func @unknown_op_attr(%x: tensor<8xf32>) {
  // expected-error @+1 {{unknown attribute 'infir2.fp8' on 'infir2.silu'}}
  %0 = infir2.silu %x {infir2.fp8} : tensor<8xf32>
  return
}

// -----

// Tests that reduce_sum reduces to a suffix of the input shape.
func.func @reduce_sum_suffix(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{expects the result shape [4] to be a suffix of the input shape [2, 4, 8]}}
  %0 = infir2.reduce_sum %x : tensor<2x4x8xf32> -> tensor<4xf32>
  return
}

// -----

// Tests that reduce_sum keeps the element type.
func.func @reduce_sum_type(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{expects 'result' to have the element type of 'input' ('f32'), got 'bf16'}}
  %0 = infir2.reduce_sum %x : tensor<2x8xf32> -> tensor<8xbf16>
  return
}

// -----

// Tests that convert keeps the shape.
func.func @convert_shape(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = infir2.convert %x : tensor<2x8xf32> -> tensor<8x2xbf16>
  return
}

// -----

// Tests that an embedding gradient is table-shaped.
func.func @embedding_grad_rank(%ids: tensor<4xi32>, %dy: tensor<4x8xf32>) {
  // expected-error @+1 {{expects a table-shaped result of rank 2 ([vocab, dim]), got shape [128]}}
  %0 = infir2.embedding_grad %ids, %dy : tensor<4xi32>, tensor<4x8xf32> -> tensor<128xf32>
  return
}

// -----

// Tests that the embedding gradient has one row per id.
func.func @embedding_grad_rows(%ids: tensor<4xi32>, %dy: tensor<3x8xf32>) {
  // expected-error @+1 {{expects 'result_grad' of shape [4, 8] (the ids' shape followed by the table's row size), got [3, 8]}}
  %0 = infir2.embedding_grad %ids, %dy : tensor<4xi32>, tensor<3x8xf32> -> tensor<16x8xf32>
  return
}

// -----

// Tests that the embedding gradient keeps the gradient's element type.
func.func @embedding_grad_type(%ids: tensor<4xi32>, %dy: tensor<4x8xf32>) {
  // expected-error @+1 {{expects 'table_grad' to have the element type of 'result_grad' ('f32'), got 'bf16'}}
  %0 = infir2.embedding_grad %ids, %dy : tensor<4xi32>, tensor<4x8xf32> -> tensor<16x8xbf16>
  return
}

// -----

// Tests that rms_norm_grad checks shapes as rms_norm does.
func.func @rms_norm_grad_weight(%x: tensor<2x8xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{expects 'weight' of shape [8] (the last dimension of 'input'), got [4]}}
  %0:2 = infir2.rms_norm_grad %x, %w, %x {epsilon = 1.0e-6 : f64} : tensor<2x8xf32>, tensor<4xf32>
  return
}

// -----

// Tests that rope_grad checks shapes as rope does.
func.func @rope_grad_heads(%dy: tensor<2x4x10xf32>, %pos: tensor<4xi32>) {
  // expected-error @+1 {{expects the last dimension of 'result_grad' (10) to be a multiple of head_dim (4)}}
  %0 = infir2.rope_grad %dy, %pos {head_dim = 4 : i64, theta = 1.0e4 : f64} : tensor<2x4x10xf32>, tensor<4xi32>
  return
}

// -----

// Tests that attention_grad checks shapes as attention does.
func.func @attention_grad_groups(%q: tensor<2x4x12xf32>, %k: tensor<2x4x8xf32>) {
  // expected-error @+1 {{expects num_heads (3) to be a multiple of num_kv_heads (2)}}
  %0:3 = infir2.attention_grad %q, %k, %k, %q {num_heads = 3 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : tensor<2x4x12xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
  return
}

// -----

// Tests that cross_entropy_grad checks shapes as cross_entropy does.
func.func @cross_entropy_grad_targets(%l: tensor<2x4x8xf32>, %t: tensor<2x3xi32>, %dl: tensor<f32>) {
  // expected-error @+1 {{expects 'targets' of shape [2, 4] (the shape of 'logits' without the vocabulary), got [2, 3]}}
  %0 = infir2.cross_entropy_grad %l, %t, %dl : tensor<2x4x8xf32>, tensor<2x3xi32>, tensor<f32>
  return
}

// -----

// Tests that a gradient accumulator names its parameter.
// expected-error @+1 {{'infir2.grad_of' on argument #0 must name a parameter}}
func.func @grad_of_name(%acc: tensor<4xf32> {infir2.grad_of = 3 : i64}) {
  return
}

// -----

// Tests that gradient accumulators are FP32.
// expected-error @+1 {{gradient accumulator of 'w' (result #0) must be an f32 tensor, got 'tensor<4xbf16>'}}
func.func private @grad_of_type() -> (tensor<4xbf16> {infir2.grad_of = "w"})

// -----

// Tests that AdamW's betas lie in [0, 1).
func.func @adamw_beta(%p: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{expects beta2 in [0, 1), got 1.000000e+00}}
  %0:3 = infir2.adamw %p, %p, %p, %p, %s, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 1.0 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<4xf32>
  return
}

// -----

// Tests that weight decay is non-negative.
func.func @sgd_decay(%p: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{expects a non-negative weight_decay, got -1.000000e-01}}
  %0 = infir2.sgd %p, %p, %s, %s, %s {weight_decay = -0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<4xf32>
  return
}

// -----

// Tests that the clipping threshold is non-negative.
func.func @sgd_clip(%p: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{expects a non-negative max_grad_norm (0 disables clipping), got -1.000000e+00}}
  %0 = infir2.sgd %p, %p, %s, %s, %s {weight_decay = 0.0 : f64, max_grad_norm = -1.0 : f64} : tensor<4xf32>
  return
}

// -----

// Tests that optimizer state is FP32.
func.func @adamw_bf16(%p: tensor<4xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit float values}}
  %0:3 = "infir2.adamw"(%p, %p, %p, %p, %s, %s, %s, %s) {beta1 = 0.9 : f64, beta2 = 0.9 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64}
      : (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>)
  return
}

// -----

// Tests that global_norm has something to measure.
func.func @global_norm_empty(%s: tensor<f32>) {
  // expected-error @+1 {{expects at least one gradient}}
  %0 = "infir2.global_norm"(%s) {operandSegmentSizes = array<i32: 0, 1>} : (tensor<f32>) -> tensor<f32>
  return
}

// -----

// Tests that master weights are FP32.
// expected-error @+1 {{master weight of 'w' (argument #0) must be an f32 tensor, got 'tensor<4xbf16>'}}
func.func private @master_bf16(tensor<4xbf16> {infir2.master_of = "w"})

// -----

// Tests that scalar inputs have a known role.
// expected-error @+1 {{'infir2.input' on argument #0 must be "learning_rate", "step" or "grad_scale"}}
func.func private @bad_role(tensor<f32> {infir2.input = "momentum"})

// -----

// Tests that a GEMM role is dgrad or wgrad.
func.func @gemm_role_value(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'infir2.gemm_role' must be "dgrad" or "wgrad"}}
  %0 = infir2.matmul %a, %a {infir2.gemm_role = "fprop"} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return
}

// -----

// Tests that a GEMM role sits on a GEMM.
func.func @gemm_role_op(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'infir2.gemm_role' is only meaningful on a GEMM}}
  %0 = infir2.silu %a {infir2.gemm_role = "dgrad"} : tensor<4x4xf32>
  return
}

// -----

// Tests that a GEMM's weight is named.
func.func @gemm_weight(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'infir2.gemm_weight' must name a parameter}}
  %0 = infir2.matmul %a, %a {infir2.gemm_weight = ""} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return
}

// -----

// Tests that an all-reduce has something to reduce.
func.func @all_reduce_empty() {
  // expected-error @+1 {{expects at least one tensor to reduce}}
  "infir2.all_reduce"() : () -> ()
  return
}

// -----

// Tests that an all-reduce's results have its operands' types.
func.func @all_reduce_types(%g: tensor<4xf32>) {
  // expected-error @+1 {{expects results of the operands' types}}
  %r = "infir2.all_reduce"(%g) : (tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

// Tests that an all-reduce sums FP32 tensors only.
func.func @all_reduce_bf16(%g: tensor<4xbf16>) {
  // expected-error @+1 {{operand #0 must be variadic of statically shaped tensor of 32-bit float values}}
  %r = infir2.all_reduce %g : tensor<4xbf16>
  return
}

// -----

// Tests that a reduce-scatter has something to reduce.
func.func @reduce_scatter_empty() {
  // expected-error @+1 {{expects at least one tensor}}
  "infir2.reduce_scatter"() {world_size = 2 : i64} : () -> ()
  return
}

// -----

// Tests that a reduce-scatter has one shard per operand.
func.func @reduce_scatter_count(%g: tensor<4xf32>) {
  // expected-error @+1 {{expects one result per operand, got 2 for 1}}
  %r:2 = "infir2.reduce_scatter"(%g) {world_size = 2 : i64} : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

// Tests that a shard has ceil(rows / world_size) rows: 5 over 2 is 3.
func.func @reduce_scatter_rows(%g: tensor<5x4xf32>) {
  // expected-error @+1 {{tensor #0: the shard of 'tensor<5x4xf32>' over 2 ranks is 'tensor<3x4xf32>', got 'tensor<2x4xf32>'}}
  %r = infir2.reduce_scatter %g {world_size = 2 : i64} : tensor<5x4xf32> -> tensor<2x4xf32>
  return
}

// -----

// Tests that a shard keeps the trailing dimensions.
func.func @reduce_scatter_columns(%g: tensor<4x4xf32>) {
  // expected-error @+1 {{tensor #0: the shard of 'tensor<4x4xf32>' over 2 ranks is 'tensor<2x4xf32>', got 'tensor<2x2xf32>'}}
  %r = infir2.reduce_scatter %g {world_size = 2 : i64} : tensor<4x4xf32> -> tensor<2x2xf32>
  return
}

// -----

// Tests that scalars have no rows to shard.
func.func @reduce_scatter_scalar(%g: tensor<f32>) {
  // expected-error @+1 {{tensor #0 is a scalar; shards are rows of a tensor}}
  %r = infir2.reduce_scatter %g {world_size = 2 : i64} : tensor<f32> -> tensor<f32>
  return
}

// -----

// Tests that the world has at least one rank.
func.func @reduce_scatter_world(%g: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'world_size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %r = infir2.reduce_scatter %g {world_size = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// Tests that reduce-scatter sums FP32 gradients only.
func.func @reduce_scatter_bf16(%g: tensor<4xbf16>) {
  // expected-error @+1 {{operand #0 must be variadic of statically shaped tensor of 32-bit float values}}
  %r = infir2.reduce_scatter %g {world_size = 2 : i64} : tensor<4xbf16> -> tensor<2xbf16>
  return
}

// -----

// Tests that an all-gather keeps the element type.
func.func @all_gather_types(%w: tensor<2xbf16>) {
  // expected-error @+1 {{tensor #0: element types differ ('f32' and 'bf16')}}
  %r = infir2.all_gather %w {world_size = 2 : i64} : tensor<2xbf16> -> tensor<4xf32>
  return
}

// -----

// Tests that an all-gather's operand is the result's shard.
func.func @all_gather_rows(%w: tensor<2xbf16>) {
  // expected-error @+1 {{tensor #0: the shard of 'tensor<8xbf16>' over 2 ranks is 'tensor<4xbf16>', got 'tensor<2xbf16>'}}
  %r = infir2.all_gather %w {world_size = 2 : i64} : tensor<2xbf16> -> tensor<8xbf16>
  return
}
