// RUN: infir2-opt %s --split-input-file --infir2-derive-decode --verify-diagnostics
// RUN: infir2-opt %s --split-input-file --infir2-derive-decode="if-supported" | FileCheck %s --check-prefix=SKIP

// Models a decode step cannot be derived from: each is an error naming why,
// or, with if-supported, leaves the module without a decode step.
// SKIP-NOT: @decode_step

func.func @forward(%emb: tensor<32x16xf32> {infir2.param = #infir2.param<"e", zeros>}, %ids: tensor<2x8xi32>, %t: tensor<2x8xi32>) -> tensor<f32> {
  %h = infir2.embedding %emb[%ids] : tensor<32x16xf32>[tensor<2x8xi32>] -> tensor<2x8x16xf32>
  // expected-error @+1 {{cannot derive a decode step from @forward: attention without a causal mask cannot be decoded token by token}}
  %a = infir2.attention %h, %h, %h {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 4 : i64}
      : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
  %l = infir2.matmul %a, %emb {transpose_rhs} : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
  %loss = infir2.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<2x8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// expected-error @+1 {{cannot derive a decode step from @forward: the logits depend on argument #2, which a decode step does not have}}
func.func @forward(%emb: tensor<32x16xf32> {infir2.param = #infir2.param<"e", zeros>}, %ids: tensor<2x8xi32>, %x: tensor<2x8x16xf32>, %t: tensor<2x8xi32>) -> tensor<f32> {
  %h = infir2.embedding %emb[%ids] : tensor<32x16xf32>[tensor<2x8xi32>] -> tensor<2x8x16xf32>
  %hx = infir2.add %h, %x : tensor<2x8x16xf32>, tensor<2x8x16xf32>
  %l = infir2.matmul %hx, %emb {transpose_rhs} : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
  %loss = infir2.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<2x8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

func.func @forward(%emb: tensor<32x16xf32> {infir2.param = #infir2.param<"e", zeros>}, %ids: tensor<2x8xi32>, %t: tensor<2x8xi32>) -> tensor<f32> {
  %h = infir2.embedding %emb[%ids] : tensor<32x16xf32>[tensor<2x8xi32>] -> tensor<2x8x16xf32>
  %l = infir2.matmul %h, %emb {transpose_rhs} : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
  %loss = infir2.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<2x8xi32> -> tensor<f32>
  %two = arith.constant dense<2.0> : tensor<f32>
  // expected-error @+1 {{cannot derive a decode step from @forward: the forward does not return the cross_entropy of logits}}
  return %two : tensor<f32>
}

// -----

func.func @forward(%emb: tensor<32x16xf32> {infir2.param = #infir2.param<"e", zeros>}, %ids: tensor<2x8xi32>, %t: tensor<2x8xi32>) -> tensor<f32> {
  %h = infir2.embedding %emb[%ids] : tensor<32x16xf32>[tensor<2x8xi32>] -> tensor<2x8x16xf32>
  // expected-error @+1 {{cannot derive a decode step from @forward: a tensor of the batch's tokens becomes one not shaped [batch, seq, ...]}}
  %r = infir2.reshape %h : tensor<2x8x16xf32> -> tensor<16x16xf32>
  %l = infir2.matmul %r, %emb {transpose_rhs} : tensor<16x16xf32>, tensor<32x16xf32> -> tensor<16x32xf32>
  %l3 = infir2.reshape %l : tensor<16x32xf32> -> tensor<2x8x32xf32>
  %loss = infir2.cross_entropy %l3, %t : tensor<2x8x32xf32>, tensor<2x8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Tests that an op with regions on the way to the logits is refused (its
// body is not cloned per token).
func.func @forward(%emb: tensor<32x16xf32> {infir2.param = #infir2.param<"e", zeros>}, %ids: tensor<2x8xi32>, %t: tensor<2x8xi32>) -> tensor<f32> {
  %h = infir2.embedding %emb[%ids] : tensor<32x16xf32>[tensor<2x8xi32>] -> tensor<2x8x16xf32>
  // expected-error @+1 {{cannot derive a decode step from @forward: an op with regions is on the way to the logits}}
  %n = linalg.map { arith.negf } ins(%h : tensor<2x8x16xf32>) outs(%h : tensor<2x8x16xf32>)
  %l = infir2.matmul %n, %emb {transpose_rhs} : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
  %loss = infir2.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<2x8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Tests that rotary positions computed in the forward (here from the token
// ids) are refused: the decode step is given the token's position.
func.func @forward(%emb: tensor<32x16xf32> {infir2.param = #infir2.param<"e", zeros>}, %ids: tensor<2x8xi32>, %t: tensor<2x8xi32>) -> tensor<f32> {
  %h = infir2.embedding %emb[%ids] : tensor<32x16xf32>[tensor<2x8xi32>] -> tensor<2x8x16xf32>
  %p = arith.addi %ids, %ids : tensor<2x8xi32>
  // expected-error @+1 {{cannot derive a decode step from @forward: rotary positions that are not the forward's positions argument}}
  %r = infir2.rope %h, %p {head_dim = 4 : i64, theta = 1.0e+04 : f64} : tensor<2x8x16xf32>, tensor<2x8xi32>
  %l = infir2.matmul %r, %emb {transpose_rhs} : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
  %loss = infir2.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<2x8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Tests that a [batch, seq, ...] tensor made from nothing per token (a
// constant) is refused: it has no one-token form.
func.func @forward(%emb: tensor<32x16xf32> {infir2.param = #infir2.param<"e", zeros>}, %ids: tensor<2x8xi32>, %t: tensor<2x8xi32>) -> tensor<f32> {
  %h = infir2.embedding %emb[%ids] : tensor<32x16xf32>[tensor<2x8xi32>] -> tensor<2x8x16xf32>
  // expected-error @+1 {{cannot derive a decode step from @forward: a tensor shaped [batch, seq, ...] that does not come from the tokens}}
  %c = arith.constant dense<1.0> : tensor<2x8x16xf32>
  %hc = infir2.add %h, %c : tensor<2x8x16xf32>, tensor<2x8x16xf32>
  %l = infir2.matmul %hc, %emb {transpose_rhs} : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
  %loss = infir2.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<2x8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Tests that logits computed from the positions alone, without token ids,
// are refused: there is no token to feed.
func.func @forward(%x: tensor<2x8x16xf32> {infir2.param = #infir2.param<"x", zeros>}, %w: tensor<32x16xf32> {infir2.param = #infir2.param<"w", zeros>}, %pos: tensor<2x8xi32>, %t: tensor<2x8xi32>) -> tensor<f32> {
  %r = infir2.rope %x, %pos {head_dim = 4 : i64, theta = 1.0e+04 : f64} : tensor<2x8x16xf32>, tensor<2x8xi32>
  %l = infir2.matmul %r, %w {transpose_rhs} : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
  // expected-error @+1 {{cannot derive a decode step from @forward: the logits do not depend on token ids}}
  %loss = infir2.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<2x8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Tests that logits without a sequence dimension ([tokens, vocab]) are
// refused.
func.func @forward(%emb: tensor<32x16xf32> {infir2.param = #infir2.param<"e", zeros>}, %ids: tensor<16xi32>, %t: tensor<16xi32>) -> tensor<f32> {
  %h = infir2.embedding %emb[%ids] : tensor<32x16xf32>[tensor<16xi32>] -> tensor<16x16xf32>
  %l = infir2.matmul %h, %emb {transpose_rhs} : tensor<16x16xf32>, tensor<32x16xf32> -> tensor<16x32xf32>
  // expected-error @+1 {{cannot derive a decode step from @forward: the logits are not shaped [batch, seq, vocab]}}
  %loss = infir2.cross_entropy %l, %t : tensor<16x32xf32>, tensor<16xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Tests that positions shared by the batch ([seq], which rope accepts) are
// refused: the decode step takes a [batch, seq] position.
// expected-error @+1 {{cannot derive a decode step from @forward: the token ids or positions are not shaped [batch, seq]}}
func.func @forward(%emb: tensor<32x16xf32> {infir2.param = #infir2.param<"e", zeros>}, %ids: tensor<2x8xi32>, %pos: tensor<8xi32>, %t: tensor<2x8xi32>) -> tensor<f32> {
  %h = infir2.embedding %emb[%ids] : tensor<32x16xf32>[tensor<2x8xi32>] -> tensor<2x8x16xf32>
  %r = infir2.rope %h, %pos {head_dim = 4 : i64, theta = 1.0e+04 : f64} : tensor<2x8x16xf32>, tensor<8xi32>
  %l = infir2.matmul %r, %emb {transpose_rhs} : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
  %loss = infir2.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<2x8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// expected-error @+1 {{expects a function 'forward' with a body of one block to derive a decode step from}}
module {
  func.func @train_step() {
    return
  }
}

// RUN: not infir2-opt %s --split-input-file --infir2-derive-decode=max-length=-3 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: max-length must be positive (or 0 for the forward's sequence length), got -3
