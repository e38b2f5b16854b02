// RUN: infir2-opt %s --split-input-file --verify-diagnostics

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

// Tests that cross_entropy_grad's result is the logits' type, or bf16 for
// f32 logits.
func.func @cross_entropy_grad_f16(%l: tensor<2x4x8xf32>, %t: tensor<2x4xi32>, %dl: tensor<f32>) {
  // expected-error @+1 {{expects 'logits_grad' of the logits' element type, or bf16 for f32 logits, got 'f16' for 'f32' logits}}
  %0 = infir2.cross_entropy_grad %l, %t, %dl : tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32> -> tensor<2x4x8xf16>
  return
}

// -----

// Tests that bf16 logits' gradient is not widened by the op (the runtimes
// round it to bf16 first).
func.func @cross_entropy_grad_widened(%l: tensor<2x4x8xbf16>, %t: tensor<2x4xi32>, %dl: tensor<f32>) {
  // expected-error @+1 {{expects 'logits_grad' of the logits' element type, or bf16 for f32 logits, got 'f32' for 'bf16' logits}}
  %0 = infir2.cross_entropy_grad %l, %t, %dl : tensor<2x4x8xbf16>, tensor<2x4xi32>, tensor<f32> -> tensor<2x4x8xf32>
  return
}

// -----

// Tests that cross_entropy_grad's result has the logits' shape.
func.func @cross_entropy_grad_shape(%l: tensor<2x4x8xf32>, %t: tensor<2x4xi32>, %dl: tensor<f32>) {
  // expected-error @+1 {{all of {logits, logits_grad} have same shape}}
  %0 = infir2.cross_entropy_grad %l, %t, %dl : tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32> -> tensor<2x4x4xbf16>
  return
}

// -----

// Tests that attention_grad checks segments as attention does.
func.func @attention_grad_segments(%q: tensor<2x4x8xf32>, %k: tensor<2x4x4xf32>, %seg: tensor<2x3xi32>) {
  // expected-error @+1 {{expects 'segments' of shape [2, 4] (batch, seq), got [2, 3]}}
  %0:3 = infir2.attention_grad %q, %k, %k, %q segments %seg {causal, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64}
      : tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x3xi32>
  return
}

// -----

// Tests that an embedding gradient's accumulator has the result's type.
func.func @embedding_grad_acc_type(%ids: tensor<4xi32>, %dy: tensor<4x8xbf16>, %acc: tensor<16x8xbf16>) {
  // expected-error @+1 {{expects the accumulator 'acc' to have the result's type 'tensor<16x8xf32>', got 'tensor<16x8xbf16>'}}
  %0 = infir2.embedding_grad %ids, %dy acc(%acc : tensor<16x8xbf16>) : tensor<4xi32>, tensor<4x8xbf16> -> tensor<16x8xf32>
  return
}

// -----

// Tests that an embedding gradient accumulates in f32 only.
func.func @embedding_grad_acc_f32(%ids: tensor<4xi32>, %dy: tensor<4x8xbf16>, %acc: tensor<16x8xbf16>) {
  // expected-error @+1 {{accumulates in f32 only: expects an f32 result with 'acc', got 'bf16'}}
  %0 = infir2.embedding_grad %ids, %dy acc(%acc : tensor<16x8xbf16>) : tensor<4xi32>, tensor<4x8xbf16> -> tensor<16x8xbf16>
  return
}

// -----

// Tests that a norm weight's gradient has the weight's type without an
// accumulator.
func.func @rms_norm_grad_weight_type(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>, %dy: tensor<4x8xbf16>) {
  // expected-error @+1 {{expects the type of 'weight_grad' to be the type of 'weight' ('tensor<8xbf16>'), got 'tensor<8xf32>'}}
  %dx, %dw = "infir2.rms_norm_grad"(%x, %w, %dy) <{epsilon = 1.0e-06 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (tensor<4x8xbf16>, tensor<8xbf16>, tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<8xf32>)
  return
}

// -----

// Tests that a norm's residual has the input's type.
func.func @rms_norm_grad_residual_type(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>, %dy: tensor<4x8xbf16>, %r: tensor<4x8xf32>) {
  // expected-error @+1 {{expects the type of 'residual' to be the type of 'input' ('tensor<4x8xbf16>'), got 'tensor<4x8xf32>'}}
  %dx, %dw = infir2.rms_norm_grad %x, %w, %dy residual(%r : tensor<4x8xf32>) {epsilon = 1.0e-06 : f64} : tensor<4x8xbf16>, tensor<8xbf16>
  return
}

// -----

// Tests that a norm weight's accumulator has the weight's shape.
func.func @rms_norm_grad_acc_shape(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>, %dy: tensor<4x8xbf16>, %acc: tensor<4xf32>) {
  // expected-error @+1 {{expects 'acc' of shape [8] (the weight's shape), got [4]}}
  %dx, %dw = infir2.rms_norm_grad %x, %w, %dy acc(%acc : tensor<4xf32>) {epsilon = 1.0e-06 : f64} : tensor<4x8xbf16>, tensor<8xbf16>
  return
}

// -----

// Tests that a norm weight's gradient accumulates in f32 only.
func.func @rms_norm_grad_acc_f32(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>, %dy: tensor<4x8xbf16>, %acc: tensor<8xbf16>) {
  // expected-error @+1 {{accumulates in f32 only: expects an f32 result with 'acc', got 'bf16'}}
  %dx, %dw = infir2.rms_norm_grad %x, %w, %dy acc(%acc : tensor<8xbf16>) {epsilon = 1.0e-06 : f64} : tensor<4x8xbf16>, tensor<8xbf16>
  return
}
