// RUN: infir2-opt %s --split-input-file --verify-diagnostics

// Tests that a group has a positive size.
// expected-error @+1 {{group size must be positive, got 0}}
func.func @groups_size() attributes {g = #fp8.groups<0, dim = 1>} {
  return
}

// -----

// Tests that a group dimension is non-negative.
// expected-error @+1 {{group dimension must be non-negative, got -1}}
func.func @groups_dim() attributes {g = #fp8.groups<128, dim = -1>} {
  return
}

// -----

// Tests that 2-D blocks have positive sizes.
// expected-error @+1 {{block sizes must be positive, got 128x0}}
func.func @blocks_size() attributes {g = #fp8.blocks<128, 0>} {
  return
}

// -----

// Tests that an unknown granularity is reported by name.
// expected-error @+1 {{unknown attribute `rows` in dialect `fp8`}}
func.func @unknown_granularity() attributes {g = #fp8.rows<128>} {
  return
}

// -----

// Tests that an unknown FP8 format is reported with the known ones.
func.func @unknown_format(%x: tensor<128x128xbf16>) {
  // expected-error @+2 {{expected ::infir2::fp8::Format to be one of: e4m3, e5m2}}
  // expected-error @+1 {{failed to parse FP8_FormatAttr parameter 'value'}}
  %q, %s = fp8.quantize %x to e3m4 by #fp8.tensorwise scale pow2 : tensor<128x128xbf16> -> tensor<128x128xf8E4M3FN>, tensor<1x1xf32>
  return
}

// -----

// Tests that quantized data keeps the input's shape.
func.func @quantize_data_shape(%x: tensor<128x256xbf16>) {
  // expected-error @+1 {{expects 'data' to have the shape of 'input' [128, 256], got [256, 128]}}
  %q, %s = fp8.quantize %x to e4m3 by #fp8.tensorwise scale pow2 : tensor<128x256xbf16> -> tensor<256x128xf8E4M3FN>, tensor<1x1xf32>
  return
}

// -----

// Tests that the data element type is the format's.
func.func @quantize_format(%x: tensor<128x256xbf16>) {
  // expected-error @+1 {{expects 'data' of element type 'f8E5M2' for format e5m2, got 'f8E4M3FN'}}
  %q, %s = fp8.quantize %x to e5m2 by #fp8.tensorwise scale pow2 : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<1x1xf32>
  return
}

// -----

// Tests that E8M0 scales are only allowed for power-of-two scales.
func.func @quantize_e8m0_fp32(%x: tensor<128x256xbf16>) {
  // expected-error @+1 {{expects f32 scales with scale rule fp32 (f8E8M0FNU holds only powers of two)}}
  %q, %s = fp8.quantize %x to e4m3 by #fp8.tensorwise scale fp32 : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<1x1xf8E8M0FNU>
  return
}

// -----

// Tests that the scale shape follows from the granularity.
func.func @quantize_scale_shape(%x: tensor<128x256xbf16>) {
  // expected-error @+1 {{expects 'scale' of shape [128, 2] (one scale per #fp8.groups<128, dim = 1> block of 'input' [128, 256]), got [1, 2]}}
  %q, %s = fp8.quantize %x to e4m3 by #fp8.groups<128, dim = 1> scale pow2 : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<1x2xf32>
  return
}

// -----

// Tests that groups must tile their dimension exactly.
func.func @quantize_groups_divide(%x: tensor<64x200xbf16>) {
  // expected-error @+1 {{'input': #fp8.groups<128, dim = 1> does not tile shape [64, 200]: block size 128 does not divide dimension 1 (size 200)}}
  %q, %s = fp8.quantize %x to e4m3 by #fp8.groups<128, dim = 1> scale pow2 : tensor<64x200xbf16> -> tensor<64x200xf8E4M3FN>, tensor<64x2xf32>
  return
}

// -----

// Tests that the group dimension exists.
func.func @quantize_group_dim_range(%x: tensor<128x128xbf16>) {
  // expected-error @+1 {{'input': group dimension 2 is out of range for a tensor of shape [128, 128]}}
  %q, %s = fp8.quantize %x to e4m3 by #fp8.groups<128, dim = 2> scale pow2 : tensor<128x128xbf16> -> tensor<128x128xf8E4M3FN>, tensor<128x1xf32>
  return
}

// -----

// Tests that 2-D blocks need a matrix.
func.func @quantize_blocks_rank(%x: tensor<256xbf16>) {
  // expected-error @+1 {{'input': 2-D blocks need a tensor of rank at least 2, got shape [256]}}
  %q, %s = fp8.quantize %x to e4m3 by #fp8.blocks<128, 128> scale pow2 : tensor<256xbf16> -> tensor<256xf8E4M3FN>, tensor<2xf32>
  return
}

// -----

// Tests that an empty tensor cannot be scaled.
func.func @quantize_empty(%x: tensor<0x128xbf16>) {
  // expected-error @+1 {{'input': cannot scale a tensor with an empty dimension: dimension 0 of shape [0, 128] has size 0}}
  %q, %s = fp8.quantize %x to e4m3 by #fp8.tensorwise scale pow2 : tensor<0x128xbf16> -> tensor<0x128xf8E4M3FN>, tensor<1x1xf32>
  return
}

// -----

// Tests that quantize takes a high-precision input.
func.func @quantize_fp8_input(%x: tensor<128x128xf8E5M2>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of bfloat16 type or 16-bit float or 32-bit float values}}
  %q, %s = fp8.quantize %x to e4m3 by #fp8.tensorwise scale pow2 : tensor<128x128xf8E5M2> -> tensor<128x128xf8E4M3FN>, tensor<1x1xf32>
  return
}

// -----

// Tests that dequantize keeps the data's shape.
func.func @dequantize_shape(%q: tensor<128x256xf8E4M3FN>, %s: tensor<1x1xf32>) {
  // expected-error @+1 {{expects the result to have the shape of 'data' [128, 256], got [256, 128]}}
  %x = fp8.dequantize (%q, %s by #fp8.tensorwise) : (tensor<128x256xf8E4M3FN>, tensor<1x1xf32>) -> tensor<256x128xbf16>
  return
}

// -----

// Tests that dequantize checks the scale shape against the granularity.
func.func @dequantize_scale(%q: tensor<256x256xf8E4M3FN>, %s: tensor<2x1xf32>) {
  // expected-error @+1 {{expects 'scale' of shape [2, 2] (one scale per #fp8.blocks<128, 128> block of 'data' [256, 256]), got [2, 1]}}
  %x = fp8.dequantize (%q, %s by #fp8.blocks<128, 128>) : (tensor<256x256xf8E4M3FN>, tensor<2x1xf32>) -> tensor<256x256xbf16>
  return
}

// -----

// Tests that scaled_matmul operands are at least matrices.
func.func @scaled_matmul_rank(%a: tensor<256xf8E4M3FN>, %as: tensor<2xf32>, %b: tensor<64x256xf8E4M3FN>, %bs: tensor<1x1xf32>) {
  // expected-error @+1 {{expects 'lhs' of rank at least 2 ([..., M, K]), got shape [256]}}
  %y = fp8.scaled_matmul (%a, %as by #fp8.groups<128, dim = 0>), (%b, %bs by #fp8.tensorwise)
      : (tensor<256xf8E4M3FN>, tensor<2xf32>), (tensor<64x256xf8E4M3FN>, tensor<1x1xf32>) -> tensor<64xbf16>
  return
}

// -----

// Tests that rhs is shared or batched like lhs.
func.func @scaled_matmul_rhs_rank(%a: tensor<2x3x64x256xf8E4M3FN>, %as: tensor<1x1x1x1xf32>, %b: tensor<3x64x256xf8E4M3FN>, %bs: tensor<1x1x1xf32>) {
  // expected-error @+1 {{expects 'rhs' of rank 2 or of the rank of 'lhs' (4), got shape [3, 64, 256]}}
  %y = fp8.scaled_matmul (%a, %as by #fp8.tensorwise), (%b, %bs by #fp8.tensorwise)
      : (tensor<2x3x64x256xf8E4M3FN>, tensor<1x1x1x1xf32>), (tensor<3x64x256xf8E4M3FN>, tensor<1x1x1xf32>) -> tensor<2x3x64x64xbf16>
  return
}

// -----

// Tests that batch dimensions agree.
func.func @scaled_matmul_batch(%a: tensor<2x64x256xf8E4M3FN>, %as: tensor<1x1x1xf32>, %b: tensor<3x64x256xf8E4M3FN>, %bs: tensor<1x1x1xf32>) {
  // expected-error @+1 {{expects equal batch dimensions, got 'lhs' [2, 64, 256] and 'rhs' [3, 64, 256]}}
  %y = fp8.scaled_matmul (%a, %as by #fp8.tensorwise), (%b, %bs by #fp8.tensorwise)
      : (tensor<2x64x256xf8E4M3FN>, tensor<1x1x1xf32>), (tensor<3x64x256xf8E4M3FN>, tensor<1x1x1xf32>) -> tensor<2x64x64xbf16>
  return
}

// -----

// Tests that both operands keep K last ("TN" layout) and agree on it.
func.func @scaled_matmul_k(%a: tensor<64x256xf8E4M3FN>, %as: tensor<64x2xf32>, %b: tensor<256x128xf8E4M3FN>, %bs: tensor<2x1xf32>) {
  // expected-error @+1 {{expects 'lhs' [..., M, K] and 'rhs' [..., N, K] to share the contraction dimension K (last), got 256 and 128}}
  %y = fp8.scaled_matmul (%a, %as by #fp8.groups<128, dim = 1>), (%b, %bs by #fp8.blocks<128, 128>)
      : (tensor<64x256xf8E4M3FN>, tensor<64x2xf32>), (tensor<256x128xf8E4M3FN>, tensor<2x1xf32>) -> tensor<64x256xbf16>
  return
}

// -----

// Tests that an accumulator has the result's type.
func.func @scaled_matmul_acc_type(%a: tensor<64x256xf8E4M3FN>, %as: tensor<64x2xf32>, %b: tensor<128x256xf8E4M3FN>, %bs: tensor<1x2xf32>, %acc: tensor<128x64xf32>) {
  // expected-error @+1 {{expects the accumulator 'acc' to have the result's type 'tensor<64x128xf32>', got 'tensor<128x64xf32>'}}
  %y = fp8.scaled_matmul (%a, %as by #fp8.groups<128, dim = 1>), (%b, %bs by #fp8.blocks<128, 128>) acc(%acc : tensor<128x64xf32>)
      : (tensor<64x256xf8E4M3FN>, tensor<64x2xf32>), (tensor<128x256xf8E4M3FN>, tensor<1x2xf32>) -> tensor<64x128xf32>
  return
}

// -----

// Tests that the result is [..., M, N].
func.func @scaled_matmul_result(%a: tensor<64x256xf8E4M3FN>, %as: tensor<64x2xf32>, %b: tensor<128x256xf8E4M3FN>, %bs: tensor<1x2xf32>) {
  // expected-error @+1 {{expects a result of shape [64, 128] ([..., M, N]), got [128, 64]}}
  %y = fp8.scaled_matmul (%a, %as by #fp8.groups<128, dim = 1>), (%b, %bs by #fp8.blocks<128, 128>)
      : (tensor<64x256xf8E4M3FN>, tensor<64x2xf32>), (tensor<128x256xf8E4M3FN>, tensor<1x2xf32>) -> tensor<128x64xbf16>
  return
}

// -----

// Tests that the lhs scales match the lhs granularity.
func.func @scaled_matmul_lhs_scale(%a: tensor<64x256xf8E4M3FN>, %as: tensor<64x1xf32>, %b: tensor<128x256xf8E4M3FN>, %bs: tensor<1x2xf32>) {
  // expected-error @+1 {{expects 'lhs_scale' of shape [64, 2] (one scale per #fp8.groups<128, dim = 1> block of 'lhs' [64, 256]), got [64, 1]}}
  %y = fp8.scaled_matmul (%a, %as by #fp8.groups<128, dim = 1>), (%b, %bs by #fp8.blocks<128, 128>)
      : (tensor<64x256xf8E4M3FN>, tensor<64x1xf32>), (tensor<128x256xf8E4M3FN>, tensor<1x2xf32>) -> tensor<64x128xbf16>
  return
}

// -----

// Tests that the rhs blocks must tile the rhs.
func.func @scaled_matmul_rhs_blocks(%a: tensor<64x256xf8E4M3FN>, %as: tensor<64x2xf32>, %b: tensor<96x256xf8E4M3FN>, %bs: tensor<1x2xf32>) {
  // expected-error @+1 {{'rhs': #fp8.blocks<128, 128> does not tile shape [96, 256]: block size 128 does not divide dimension 0 (size 96)}}
  %y = fp8.scaled_matmul (%a, %as by #fp8.groups<128, dim = 1>), (%b, %bs by #fp8.blocks<128, 128>)
      : (tensor<64x256xf8E4M3FN>, tensor<64x2xf32>), (tensor<96x256xf8E4M3FN>, tensor<1x2xf32>) -> tensor<64x96xbf16>
  return
}

// -----

// Tests that the rhs scales match the rhs granularity.
func.func @scaled_matmul_rhs_scale(%a: tensor<64x256xf8E4M3FN>, %as: tensor<64x2xf32>, %b: tensor<128x256xf8E4M3FN>, %bs: tensor<2x1xf32>) {
  // expected-error @+1 {{expects 'rhs_scale' of shape [1, 2] (one scale per #fp8.blocks<128, 128> block of 'rhs' [128, 256]), got [2, 1]}}
  %y = fp8.scaled_matmul (%a, %as by #fp8.groups<128, dim = 1>), (%b, %bs by #fp8.blocks<128, 128>)
      : (tensor<64x256xf8E4M3FN>, tensor<64x2xf32>), (tensor<128x256xf8E4M3FN>, tensor<2x1xf32>) -> tensor<64x128xbf16>
  return
}

// -----

// Tests that the accumulator is written as BF16 or FP32, never FP16 or FP8.
func.func @scaled_matmul_result_type(%a: tensor<64x256xf8E4M3FN>, %as: tensor<1x1xf32>, %b: tensor<128x256xf8E4M3FN>, %bs: tensor<1x1xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor of bfloat16 type or 32-bit float values}}
  %y = fp8.scaled_matmul (%a, %as by #fp8.tensorwise), (%b, %bs by #fp8.tensorwise)
      : (tensor<64x256xf8E4M3FN>, tensor<1x1xf32>), (tensor<128x256xf8E4M3FN>, tensor<1x1xf32>) -> tensor<64x128xf16>
  return
}

// -----

// Tests that scaled_matmul operands are FP8.
func.func @scaled_matmul_operand_type(%a: tensor<64x256xbf16>, %as: tensor<1x1xf32>, %b: tensor<128x256xf8E4M3FN>, %bs: tensor<1x1xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of f8E4M3FN type or f8E5M2 type values}}
  %y = fp8.scaled_matmul (%a, %as by #fp8.tensorwise), (%b, %bs by #fp8.tensorwise)
      : (tensor<64x256xbf16>, tensor<1x1xf32>), (tensor<128x256xf8E4M3FN>, tensor<1x1xf32>) -> tensor<64x128xbf16>
  return
}

// -----

// Tests that amax has one value per block.
func.func @amax_shape(%x: tensor<64x256xbf16>) {
  // expected-error @+1 {{expects 'result' of shape [64, 2] (one scale per #fp8.groups<128, dim = 1> block of 'input' [64, 256]), got [64, 1]}}
  %a = fp8.amax (%x by #fp8.groups<128, dim = 1>) : tensor<64x256xbf16> -> tensor<64x1xf32>
  return
}

// -----

// Tests that a granularity operand must implement the granularity interface.
func.func @not_a_granularity(%x: tensor<64x256xbf16>) {
  // expected-error @+1 {{Invalid attribute `granularity` in property conversion: 3 : i64}}
  %a = "fp8.amax"(%x) <{granularity = 3 : i64}> : (tensor<64x256xbf16>) -> tensor<1x1xf32>
  return
}

// -----

// Tests that an FP8 decision is complete.
// expected-error @+1 {{an fp8 decision names lhs, rhs, lhs_format, rhs_format and scales}}
func.func @decision_incomplete() attributes {d = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.tensorwise, reason = "x">} {
  return
}

// -----

// Tests that a high-precision decision names no FP8 details.
// expected-error @+1 {{a high-precision decision has no granularities, formats or scales}}
func.func @decision_high() attributes {d = #fp8.decision<precision = high, role = fprop, scales = pow2, reason = "x">} {
  return
}

// -----

// Tests that a decision has a reason.
// expected-error @+1 {{a decision states its reason}}
func.func @decision_reason() attributes {d = #fp8.decision<precision = high, role = dgrad, reason = "">} {
  return
}

// -----

// Tests that fp8.decision holds a decision.
func.func @decision_kind(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'fp8.decision' must be a #fp8.decision, got "fp8"}}
  %0 = infir2.matmul %a, %a {fp8.decision = "fp8"} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return
}

// -----

// Tests that unknown fp8 attributes on operations are reported.
func.func @unknown_fp8_attr(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{unknown attribute 'fp8.precision' on 'infir2.matmul'}}
  %0 = infir2.matmul %a, %a {fp8.precision} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return
}

// -----

// Tests that quantize_dual needs a matrix to transpose.
func.func @dual_rank(%x: tensor<256xbf16>) {
  // expected-error @+1 {{expects 'input' of rank at least 2 (it has a transposed copy), got shape [256]}}
  %q:4 = fp8.quantize_dual %x to e4m3 by #fp8.tensorwise and transposed by #fp8.tensorwise scale pow2 : tensor<256xbf16> -> tensor<256xf8E4M3FN>, tensor<1xf32>, tensor<256xf8E4M3FN>, tensor<1xf32>
  return
}

// -----

// Tests that quantize_dual's row-wise copy has the input's shape.
func.func @dual_data_shape(%x: tensor<128x256xbf16>) {
  // expected-error @+1 {{expects 'data' to have the shape of 'input' [128, 256], got [256, 128]}}
  %q:4 = fp8.quantize_dual %x to e4m3 by #fp8.tensorwise and transposed by #fp8.tensorwise scale pow2 : tensor<128x256xbf16> -> tensor<256x128xf8E4M3FN>, tensor<1x1xf32>, tensor<256x128xf8E4M3FN>, tensor<1x1xf32>
  return
}

// -----

// Tests that quantize_dual's column-wise copy is the [K, T] transpose.
func.func @dual_data_t_shape(%x: tensor<2x128x256xbf16>) {
  // expected-error @+1 {{expects 'data_t' of shape [256, 256] (the transpose of 'input' viewed as [T, K]), got [2, 256, 128]}}
  %q:4 = fp8.quantize_dual %x to e4m3 by #fp8.tensorwise and transposed by #fp8.tensorwise scale pow2 : tensor<2x128x256xbf16> -> tensor<2x128x256xf8E4M3FN>, tensor<1x1x1xf32>, tensor<2x256x128xf8E4M3FN>, tensor<1x1x1xf32>
  return
}

// -----

// Tests that both copies of a quantize_dual have the format's element type.
func.func @dual_format(%x: tensor<128x256xbf16>) {
  // expected-error @+1 {{expects 'data_t' of element type 'f8E5M2' for format e5m2, got 'f8E4M3FN'}}
  %q:4 = fp8.quantize_dual %x to e5m2 by #fp8.tensorwise and transposed by #fp8.tensorwise scale pow2 : tensor<128x256xbf16> -> tensor<128x256xf8E5M2>, tensor<1x1xf32>, tensor<256x128xf8E4M3FN>, tensor<1x1xf32>
  return
}

// -----

// Tests that quantize_dual keeps E8M0 scales to the pow2 rule.
func.func @dual_e8m0(%x: tensor<128x256xbf16>) {
  // expected-error @+1 {{expects f32 scales with scale rule fp32 (f8E8M0FNU holds only powers of two)}}
  %q:4 = fp8.quantize_dual %x to e4m3 by #fp8.tensorwise and transposed by #fp8.tensorwise scale fp32 : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<1x1xf8E8M0FNU>, tensor<256x128xf8E4M3FN>, tensor<1x1xf32>
  return
}

// -----

// Tests that the column-wise scales follow the transposed granularity.
func.func @dual_scale_t(%x: tensor<128x256xbf16>) {
  // expected-error @+1 {{expects 'scale_t' of shape [256, 1] (one scale per #fp8.groups<128, dim = 1> block of 'data_t' [256, 128]), got [2, 1]}}
  %q:4 = fp8.quantize_dual %x to e4m3 by #fp8.groups<128, dim = 1> and transposed by #fp8.groups<128, dim = 1> scale pow2 : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<128x2xf32>, tensor<256x128xf8E4M3FN>, tensor<2x1xf32>
  return
}

// -----

// Tests that the row-wise scales follow the granularity.
func.func @dual_scale(%x: tensor<128x256xbf16>) {
  // expected-error @+1 {{expects 'scale' of shape [128, 2] (one scale per #fp8.groups<128, dim = 1> block of 'data' [128, 256]), got [1, 2]}}
  %q:4 = fp8.quantize_dual %x to e4m3 by #fp8.groups<128, dim = 1> and transposed by #fp8.groups<128, dim = 1> scale pow2 : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<1x2xf32>, tensor<256x128xf8E4M3FN>, tensor<256x1xf32>
  return
}

// -----

// Tests that an fp8.fused body ends with fp8.yield.
func.func @fused_no_yield(%x: tensor<128x256xbf16>) {
  // expected-error @+1 {{expects its body to end with fp8.yield}}
  fp8.fused {
    %n = infir2.silu %x : tensor<128x256xbf16>
    %a, %b = fp8.quantize %n to e4m3 by #fp8.tensorwise scale pow2 : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<1x1xf32>
    func.return
  }
  return
}

// -----

// Tests that an fp8.fused body is not empty.
func.func @fused_empty() {
  // expected-error @+1 {{expects a producer op and its quantizations, got an empty body}}
  fp8.fused {
    fp8.yield
  }
  return
}

// -----

// Tests that an fp8.fused body begins with its producer.
func.func @fused_quantize_first(%x: tensor<128x256xbf16>) {
  // expected-error @+1 {{expects its body to begin with the producer, not a quantization}}
  fp8.fused {
    %a, %b = fp8.quantize %x to e4m3 by #fp8.tensorwise scale pow2 : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<1x1xf32>
    fp8.yield
  }
  return
}

// -----

// Tests that the producer of an fp8.fused body has one result.
func.func @fused_two_results(%g: tensor<128x256xbf16>, %u: tensor<128x256xbf16>, %dy: tensor<128x256xbf16>) {
  // expected-error @+1 {{expects a producer of one result, got 'infir2.swiglu_grad' with 2}}
  fp8.fused {
    %dg, %du = infir2.swiglu_grad %g, %u, %dy : tensor<128x256xbf16>
    fp8.yield
  }
  return
}

// -----

// Tests that everything after the producer quantizes the producer's result.
func.func @fused_foreign(%x: tensor<128x256xbf16>) {
  fp8.fused {
    %n = infir2.silu %x : tensor<128x256xbf16>
    // expected-error @+1 {{in an fp8.fused body must be a quantization of the producer's result}}
    %a, %b = fp8.quantize %x to e4m3 by #fp8.tensorwise scale pow2 : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<1x1xf32>
    fp8.yield
  }
  return
}

// -----

// Tests that an fp8.fused body fuses at least one quantization.
func.func @fused_nothing(%x: tensor<128x256xbf16>) {
  // expected-error @+1 {{fuses no quantization into 'infir2.silu'}}
  %y = fp8.fused -> (tensor<128x256xbf16>) {
    %n = infir2.silu %x : tensor<128x256xbf16>
    fp8.yield %n : tensor<128x256xbf16>
  }
  return
}

// -----

// Tests that an fp8.fused body yields values of its result types.
func.func @fused_yield_types(%x: tensor<128x256xbf16>) {
  // expected-error @+1 {{yields 1 value(s) whose types do not match its 2 result(s)}}
  %y:2 = fp8.fused -> (tensor<128x256xbf16>, tensor<1x1xf32>) {
    %n = infir2.silu %x : tensor<128x256xbf16>
    %a, %b = fp8.quantize %n to e4m3 by #fp8.tensorwise scale pow2 : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<1x1xf32>
    fp8.yield %n : tensor<128x256xbf16>
  }
  return
}

// -----

// Tests that fp8.yield appears only in an fp8.fused body.
func.func @yield_outside() {
  // expected-error @+1 {{expects parent op 'fp8.fused'}}
  fp8.yield
}

// -----

// Tests that an MX block dimension is non-negative.
// expected-error @+1 {{MX block dimension must be non-negative, got -1}}
func.func @mx_dim() attributes {g = #fp8.mx<dim = -1>} {
  return
}

// -----

// Tests that an MX block dimension exists.
func.func @mx_dim_range(%x: tensor<64x256xbf16>) {
  // expected-error @+1 {{'fp8.quantize' op 'input': MX block dimension 2 is out of range for a tensor of shape [64, 256]}}
  %q, %s = fp8.quantize %x to e4m3 by #fp8.mx<dim = 2> scale pow2 : tensor<64x256xbf16> -> tensor<64x256xf8E4M3FN>, tensor<64x8xf8E8M0FNU>
  return
}

// -----

// Tests that 32 divides the MX block dimension.
func.func @mx_tiles(%x: tensor<64x240xbf16>) {
  // expected-error @+1 {{#fp8.mx<dim = 1> does not tile shape [64, 240]: block size 32 does not divide dimension 1 (size 240)}}
  %q, %s = fp8.quantize %x to e4m3 by #fp8.mx<dim = 1> scale pow2 : tensor<64x240xbf16> -> tensor<64x240xf8E4M3FN>, tensor<64x7xf8E8M0FNU>
  return
}

// -----

// Tests that MX blocks carry E8M0 scales, not f32.
func.func @mx_f32_scales(%x: tensor<64x256xbf16>) {
  // expected-error @+1 {{expects 'scale' of element type 'f8E8M0FNU' (#fp8.mx<dim = 1> blocks carry E8M0 scales), got 'f32'}}
  %q, %s = fp8.quantize %x to e4m3 by #fp8.mx<dim = 1> scale pow2 : tensor<64x256xbf16> -> tensor<64x256xf8E4M3FN>, tensor<64x8xf32>
  return
}

// -----

// Tests that quantize_dual's transposed MX copy carries E8M0 scales too.
func.func @mx_dual_f32_scales(%x: tensor<64x256xbf16>) {
  // expected-error @+1 {{expects 'scale_t' of element type 'f8E8M0FNU' (#fp8.mx<dim = 1> blocks carry E8M0 scales), got 'f32'}}
  %q:4 = fp8.quantize_dual %x to e4m3 by #fp8.mx<dim = 1> and transposed by #fp8.mx<dim = 1> scale pow2 : tensor<64x256xbf16> -> tensor<64x256xf8E4M3FN>, tensor<64x8xf8E8M0FNU>, tensor<256x64xf8E4M3FN>, tensor<256x2xf32>
  return
}

// -----

// Tests that MX scales keep the pow2 rule (E8M0 holds powers of two only).
func.func @mx_fp32_rule(%x: tensor<64x256xbf16>) {
  // expected-error @+1 {{expects f32 scales with scale rule fp32 (f8E8M0FNU holds only powers of two)}}
  %q, %s = fp8.quantize %x to e4m3 by #fp8.mx<dim = 1> scale fp32 : tensor<64x256xbf16> -> tensor<64x256xf8E4M3FN>, tensor<64x8xf8E8M0FNU>
  return
}

// -----

// Tests that dequantize checks MX scales' type.
func.func @mx_dequantize(%q: tensor<64x256xf8E4M3FN>, %s: tensor<64x8xf32>) {
  // expected-error @+1 {{expects 'scale' of element type 'f8E8M0FNU' (#fp8.mx<dim = 1> blocks carry E8M0 scales), got 'f32'}}
  %x = fp8.dequantize (%q, %s by #fp8.mx<dim = 1>) : (tensor<64x256xf8E4M3FN>, tensor<64x8xf32>) -> tensor<64x256xbf16>
  return
}

// -----

// Tests that an MX GEMM has both operands in MX blocks.
func.func @mx_mixed(%a: tensor<64x256xf8E4M3FN>, %as: tensor<64x8xf8E8M0FNU>, %b: tensor<96x256xf8E4M3FN>, %bs: tensor<96x2xf32>) {
  // expected-error @+1 {{expects both operands in #fp8.mx blocks or neither, got #fp8.mx<dim = 1> and #fp8.groups<128, dim = 1>}}
  %y = fp8.scaled_matmul (%a, %as by #fp8.mx<dim = 1>), (%b, %bs by #fp8.groups<128, dim = 1>)
      : (tensor<64x256xf8E4M3FN>, tensor<64x8xf8E8M0FNU>), (tensor<96x256xf8E4M3FN>, tensor<96x2xf32>) -> tensor<64x96xbf16>
  return
}

// -----

// Tests that an MX GEMM's blocks run along K.
func.func @mx_not_k(%a: tensor<64x256xf8E4M3FN>, %as: tensor<2x256xf8E8M0FNU>, %b: tensor<96x256xf8E4M3FN>, %bs: tensor<96x8xf8E8M0FNU>) {
  // expected-error @+1 {{expects the #fp8.mx blocks of 'lhs' along its contraction dimension K (1, the last), got dim = 0}}
  %y = fp8.scaled_matmul (%a, %as by #fp8.mx<dim = 0>), (%b, %bs by #fp8.mx<dim = 1>)
      : (tensor<64x256xf8E4M3FN>, tensor<2x256xf8E8M0FNU>), (tensor<96x256xf8E4M3FN>, tensor<96x8xf8E8M0FNU>) -> tensor<64x96xbf16>
  return
}

// -----

// Tests that an MX decision has both operands in MX blocks.
// expected-error @+1 {{an MX decision has both operands in #fp8.mx blocks, got #fp8.mx<dim = 1> and #fp8.blocks<128, 128>}}
func.func @decision_mx_mixed() attributes {d = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.mx<dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">} {
  return
}

// -----

// Tests that an MX decision takes a power-of-two scale rule.
// expected-error @+1 {{an MX decision takes a power-of-two scale rule (pow2 or floor): MX scales are E8M0, not fp32}}
func.func @decision_mx_fp32() attributes {d = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.mx<dim = 1>, rhs = #fp8.mx<dim = 1>, lhs_format = e4m3, rhs_format = e4m3, scales = fp32, reason = "x">} {
  return
}
