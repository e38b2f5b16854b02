// RUN: infir2-opt %s --split-input-file --verify-diagnostics

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

// Tests that reduce_sum's accumulator has the result's type.
func.func @reduce_sum_acc_type(%x: tensor<2x8xbf16>, %acc: tensor<4xf32>) {
  // expected-error @+1 {{expects the accumulator 'acc' to have the result's type 'tensor<8xf32>', got 'tensor<4xf32>'}}
  %0 = infir2.reduce_sum %x acc(%acc : tensor<4xf32>) : tensor<2x8xbf16> -> tensor<8xf32>
  return
}

// -----

// Tests that reduce_sum accumulates in f32 only.
func.func @reduce_sum_acc_f32(%x: tensor<2x8xbf16>, %acc: tensor<8xbf16>) {
  // expected-error @+1 {{accumulates in f32 only: expects an f32 result with 'acc', got 'bf16'}}
  %0 = infir2.reduce_sum %x acc(%acc : tensor<8xbf16>) : tensor<2x8xbf16> -> tensor<8xbf16>
  return
}

// -----

// Tests that convert keeps the shape.
func.func @convert_shape(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = infir2.convert %x : tensor<2x8xf32> -> tensor<8x2xbf16>
  return
}
