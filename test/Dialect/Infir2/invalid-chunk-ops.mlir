// RUN: infir2-opt %s --split-input-file --verify-diagnostics

// Tests that a slice's rows lie inside its input.
func.func @slice_past_end(%x: tensor<8x4xbf16>) {
  // expected-error @+1 {{expects rows [6, 10) inside the input's 8 rows}}
  %0 = infir2.slice %x[6] : tensor<8x4xbf16> -> tensor<4x4xbf16>
  return
}

// -----

// Tests that a slice keeps every dimension but the leading one.
func.func @slice_width(%x: tensor<8x4xbf16>) {
  // expected-error @+1 {{expects 'result' of shape [2, 4] (the shape of 'input' but for the leading dimension), got [2, 3]}}
  %0 = infir2.slice %x[0] : tensor<8x4xbf16> -> tensor<2x3xbf16>
  return
}

// -----

// Tests that a slice keeps its input's element type.
func.func @slice_type(%x: tensor<8x4xbf16>) {
  // expected-error @+1 {{expects 'result' to have the element type of 'input' ('bf16'), got 'f32'}}
  %0 = infir2.slice %x[0] : tensor<8x4xbf16> -> tensor<2x4xf32>
  return
}

// -----

// Tests that a slice has rows to take.
func.func @slice_scalar(%x: tensor<f32>) {
  // expected-error @+1 {{expects tensors of rank at least 1 (rows along the leading dimension)}}
  %0 = infir2.slice %x[0] : tensor<f32> -> tensor<f32>
  return
}

// -----

// Tests that a slice starts at a row.
func.func @slice_negative(%x: tensor<8x4xbf16>) {
  // expected-error @+1 {{attribute 'start' failed to satisfy constraint}}
  %0 = infir2.slice %x[-1] : tensor<8x4xbf16> -> tensor<2x4xbf16>
  return
}

// -----

// Tests that a concatenation's rows add up to its result's.
func.func @concat_rows(%x: tensor<2x4xbf16>) {
  // expected-error @+1 {{expects a result of 4 rows (the inputs' sum), got 5}}
  %0 = infir2.concat %x, %x : tensor<2x4xbf16>, tensor<2x4xbf16> -> tensor<5x4xbf16>
  return
}

// -----

// Tests that a concatenation's inputs match the result but for their rows.
func.func @concat_width(%x: tensor<2x4xbf16>, %y: tensor<2x3xbf16>) {
  // expected-error @+1 {{expects 'input #1' of shape [2, 4] (the shape of 'result' but for the leading dimension), got [2, 3]}}
  %0 = infir2.concat %x, %y : tensor<2x4xbf16>, tensor<2x3xbf16> -> tensor<4x4xbf16>
  return
}

// -----

// Tests that a concatenation's inputs have the result's element type.
func.func @concat_type(%x: tensor<2x4xbf16>, %y: tensor<2x4xf32>) {
  // expected-error @+1 {{expects 'input #1' to have the element type of 'result' ('bf16'), got 'f32'}}
  %0 = infir2.concat %x, %y : tensor<2x4xbf16>, tensor<2x4xf32> -> tensor<4x4xbf16>
  return
}

// -----

// Tests that a concatenation has an input.
func.func @concat_empty() {
  // expected-error @+1 {{expects at least one input}}
  %0 = "infir2.concat"() : () -> tensor<4x4xbf16>
  return
}

// -----

// Tests that a loss weight's mask has one weight per target.
func.func @loss_weight_mask(%t: tensor<8xi32>, %m: tensor<4xf32>) {
  // expected-error @+1 {{expects 'loss_mask' of shape [8] (the shape of 'targets'), got [4]}}
  %0 = infir2.loss_weight %t mask %m : tensor<8xi32>, tensor<4xf32> -> tensor<f32>
  return
}

// -----

// Tests that a divisor is an f32 scalar.
func.func @divisor_type(%l: tensor<4x16xf32>, %t: tensor<4xi32>, %d: tensor<1xf32>) {
  // expected-error @+1 {{operand #2 must be 0D tensor of 32-bit float values}}
  %0 = "infir2.cross_entropy"(%l, %t, %d) <{ignore_index = -100 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 1>}> : (tensor<4x16xf32>, tensor<4xi32>, tensor<1xf32>) -> tensor<f32>
  return
}

// -----

// Tests that infir2.chunked is a string on a loss weight.
func.func @chunked_elsewhere(%t: tensor<8xi32>) {
  // expected-error @+1 {{'infir2.chunked' is a string on an 'infir2.loss_weight'}}
  %0 = infir2.reshape %t {infir2.chunked = "why"} : tensor<8xi32> -> tensor<2x4xi32>
  return
}

// -----

func.func @chunked_not_string(%t: tensor<8xi32>) {
  // expected-error @+1 {{'infir2.chunked' is a string on an 'infir2.loss_weight'}}
  %0 = infir2.loss_weight %t {infir2.chunked = 1 : i64} : tensor<8xi32> -> tensor<f32>
  return
}

// -----

// Tests that infir2.recompute (--infir2-recompute's reason) is a string.
func.func @recompute_not_string(%x: tensor<8x4xbf16>) {
  // expected-error @+1 {{'infir2.recompute' must be a string (why)}}
  %0 = infir2.silu %x {infir2.recompute = 1 : i64} : tensor<8x4xbf16>
  return
}

// -----

// Tests that a start past any row count is refused, not overflowed.
func.func @slice_huge_start(%x: tensor<8x4xbf16>) {
  // expected-error @+1 {{inside the input's 8 rows}}
  %0 = infir2.slice %x[9223372036854775807] : tensor<8x4xbf16> -> tensor<2x4xbf16>
  return
}
