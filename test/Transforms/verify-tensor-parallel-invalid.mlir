// RUN: infir2-opt %s --split-input-file --infir2-verify-tensor-parallel --verify-diagnostics

// A row-parallel GEMM's partial sum added without tp_reduce.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%x: tensor<4x64xbf16>, %r: tensor<4x64xbf16>,
    %wg: tensor<32x64xbf16> {infir2.param = #infir2.param<"up", normal(std = 0.02)>, infir2.tp_shard = 0 : i64},
    %wd: tensor<64x32xbf16> {infir2.param = #infir2.param<"down", normal(std = 0.02)>, infir2.tp_shard = 1 : i64}) -> tensor<4x64xbf16> {
  %xin = infir2.tp_copy %x {size = 2 : i64} : tensor<4x64xbf16>
  %h = infir2.matmul %xin, %wg {transpose_rhs} : tensor<4x64xbf16>, tensor<32x64xbf16> -> tensor<4x32xbf16>
  %a = infir2.silu %h : tensor<4x32xbf16>
  %d = infir2.matmul %a, %wd {transpose_rhs} : tensor<4x32xbf16>, tensor<64x32xbf16> -> tensor<4x64xbf16>
  // expected-error@+1 {{operand #1 is a partial sum: a partial sum must be summed by 'infir2.tp_reduce' first}}
  %s = infir2.add %r, %d : tensor<4x64xbf16>, tensor<4x64xbf16>
  return %s : tensor<4x64xbf16>
}
}

// -----

// A column-parallel GEMM whose input did not enter through tp_copy.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%x: tensor<4x64xbf16>,
    %wg: tensor<32x64xbf16> {infir2.param = #infir2.param<"up", normal(std = 0.02)>, infir2.tp_shard = 0 : i64}) -> tensor<4x32xbf16> {
  // expected-error@+1 {{operand #0 is a whole tensor: a column-parallel GEMM reads its input through 'infir2.tp_copy', so that the input's gradient is summed over the ranks}}
  %h = infir2.matmul %x, %wg {transpose_rhs} : tensor<4x64xbf16>, tensor<32x64xbf16> -> tensor<4x32xbf16>
  return %h : tensor<4x32xbf16>
}
}

// -----

// A shard reaching a norm, which runs on whole tensors.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%x: tensor<4x64xbf16>, %n: tensor<32xbf16>,
    %wg: tensor<32x64xbf16> {infir2.param = #infir2.param<"up", normal(std = 0.02)>, infir2.tp_shard = 0 : i64}) -> tensor<4x32xbf16> {
  %xin = infir2.tp_copy %x {size = 2 : i64} : tensor<4x64xbf16>
  %h = infir2.matmul %xin, %wg {transpose_rhs} : tensor<4x64xbf16>, tensor<32x64xbf16> -> tensor<4x32xbf16>
  // expected-error@+1 {{operand #0 is a shard: 'infir2.rms_norm' runs on whole tensors (insert the collective that makes it whole)}}
  %y = infir2.rms_norm %h, %n {epsilon = 1.0e-06 : f64} : tensor<4x32xbf16>, tensor<32xbf16>
  return %y : tensor<4x32xbf16>
}
}

// -----

// A shard added to a whole tensor.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%x: tensor<4x64xbf16>, %b: tensor<4x32xbf16>,
    %wg: tensor<32x64xbf16> {infir2.param = #infir2.param<"up", normal(std = 0.02)>, infir2.tp_shard = 0 : i64}) -> tensor<4x32xbf16> {
  %xin = infir2.tp_copy %x {size = 2 : i64} : tensor<4x64xbf16>
  %h = infir2.matmul %xin, %wg {transpose_rhs} : tensor<4x64xbf16>, tensor<32x64xbf16> -> tensor<4x32xbf16>
  // expected-error@+1 {{operand #1 is a whole tensor: the op mixes shards and whole tensors}}
  %s = infir2.add %h, %b : tensor<4x32xbf16>, tensor<4x32xbf16>
  return %s : tensor<4x32xbf16>
}
}

// -----

// tp_reduce of a whole tensor (it would double it), and a shard entering.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%x: tensor<4x64xbf16>) -> tensor<4x64xbf16> {
  // expected-error@+1 {{operand #0 is a whole tensor: 'infir2.tp_reduce' sums partial sums (of a whole tensor it would make 2 times the value)}}
  %s = infir2.tp_reduce %x {size = 2 : i64} : tensor<4x64xbf16>
  return %s : tensor<4x64xbf16>
}
}

// -----

module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%w: tensor<32x64xbf16> {infir2.param = #infir2.param<"up", normal(std = 0.02)>, infir2.tp_shard = 0 : i64}) -> tensor<32x64xbf16> {
  // expected-error@+1 {{operand #0 is a shard: only a whole tensor enters a tensor-parallel region}}
  %c = infir2.tp_copy %w {size = 2 : i64} : tensor<32x64xbf16>
  return %c : tensor<32x64xbf16>
}
}

// -----

// A shard returned whole.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%w: tensor<32x64xbf16> {infir2.param = #infir2.param<"up", normal(std = 0.02)>, infir2.tp_shard = 0 : i64}) -> tensor<32x64xbf16> {
  // expected-error@+1 {{operand #0 is a shard: 'func.return' runs on whole tensors (insert the collective that makes it whole)}}
  return %w : tensor<32x64xbf16>
}
}

// -----

// A GEMM reading a shard on the left with a whole weight.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%x: tensor<4x64xbf16>, %w2: tensor<64x32xbf16>,
    %wg: tensor<32x64xbf16> {infir2.param = #infir2.param<"up", normal(std = 0.02)>, infir2.tp_shard = 0 : i64}) -> tensor<4x64xbf16> {
  %xin = infir2.tp_copy %x {size = 2 : i64} : tensor<4x64xbf16>
  %h = infir2.matmul %xin, %wg {transpose_rhs} : tensor<4x64xbf16>, tensor<32x64xbf16> -> tensor<4x32xbf16>
  // expected-error@+1 {{operand #0 is a shard: a GEMM takes a shard on the left only with a weight sharded along the contraction (row-parallel), and a shard on the right only along its output features (column-parallel)}}
  %d = infir2.matmul %h, %w2 {transpose_rhs} : tensor<4x32xbf16>, tensor<64x32xbf16> -> tensor<4x64xbf16>
  return %d : tensor<4x64xbf16>
}
}

// -----

// A collective over another group size than the module's.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%x: tensor<4x64xbf16>) -> tensor<4x64xbf16> {
  // expected-error@+1 {{is over 4 ranks in a module of tensor-parallel size 2}}
  %c = infir2.tp_copy %x {size = 4 : i64} : tensor<4x64xbf16>
  return %c : tensor<4x64xbf16>
}
}

// -----

// expected-error@+1 {{'infir2.tensor_parallel' is an integer of at least 2 (the group's size) on the module}}
module attributes {infir2.tensor_parallel = 1 : i64} {
}

// -----

// expected-error@+1 {{'infir2.tp_shard' on argument #0 must be a dimension of the argument's tensor}}
func.func @f(%w: tensor<32x64xbf16> {infir2.tp_shard = 2 : i64}) {
  return
}

// -----

func.func @f(%x: tensor<4x64xbf16>) -> tensor<4x64xbf16> {
  // expected-error@+1 {{'infir2.tp_reduce' op attribute 'size' failed to satisfy constraint}}
  %s = infir2.tp_reduce %x {size = 1 : i64} : tensor<4x64xbf16>
  return %s : tensor<4x64xbf16>
}
