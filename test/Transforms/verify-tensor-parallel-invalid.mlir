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
  // expected-error@+1 {{operand #1 is a whole tensor: the op mixes a shard and a whole tensor}}
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

// -----

// An entered value read by a norm: its gradient would be summed twice.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%x: tensor<4x64xbf16>, %n: tensor<64xbf16>) -> tensor<4x64xbf16> {
  %xin = infir2.tp_copy %x {size = 2 : i64} : tensor<4x64xbf16>
  // expected-error@+1 {{operand #0 is a whole tensor entered through 'infir2.tp_copy': only column-parallel GEMMs and, with sequence parallelism, norms' weights read it (its gradient is summed over the ranks: another reader's would be counted 2 times)}}
  %y = infir2.rms_norm %xin, %n {epsilon = 1.0e-06 : f64} : tensor<4x64xbf16>, tensor<64xbf16>
  return %y : tensor<4x64xbf16>
}
}

// -----

// An entered value read by a GEMM of a whole weight.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%x: tensor<4x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<4x64xbf16> {
  %xin = infir2.tp_copy %x {size = 2 : i64} : tensor<4x64xbf16>
  // expected-error@+1 {{operand #0 is a whole tensor entered through 'infir2.tp_copy': only column-parallel GEMMs and, with sequence parallelism, norms' weights read it}}
  %y = infir2.matmul %xin, %w {transpose_rhs} : tensor<4x64xbf16>, tensor<64x64xbf16> -> tensor<4x64xbf16>
  return %y : tensor<4x64xbf16>
}
}

// -----

// Entering twice.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%x: tensor<4x64xbf16>) -> tensor<4x64xbf16> {
  %a = infir2.tp_copy %x {size = 2 : i64} : tensor<4x64xbf16>
  // expected-error@+1 {{operand #0 is a whole tensor entered through 'infir2.tp_copy': only a whole tensor enters a tensor-parallel region}}
  %b = infir2.tp_copy %a {size = 2 : i64} : tensor<4x64xbf16>
  return %b : tensor<4x64xbf16>
}
}

// -----

// A shard on the right that is not a parameter.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%x: tensor<32x64xbf16>, %y: tensor<4x64xbf16>,
    %wg: tensor<32x64xbf16> {infir2.param = #infir2.param<"up", normal(std = 0.02)>, infir2.tp_shard = 0 : i64}) -> tensor<4x32xbf16> {
  %s = infir2.add %wg, %wg : tensor<32x64xbf16>, tensor<32x64xbf16>
  // expected-error@+1 {{operand #1 is a shard: a GEMM's sharded right-hand side must be a parameter with 'infir2.tp_shard'}}
  %h = infir2.matmul %y, %s {transpose_rhs} : tensor<4x64xbf16>, tensor<32x64xbf16> -> tensor<4x32xbf16>
  return %h : tensor<4x32xbf16>
}
}

// -----

// A partial sum into a GEMM.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%x: tensor<4x64xbf16>, %w: tensor<64x64xbf16>,
    %wg: tensor<32x64xbf16> {infir2.param = #infir2.param<"up", normal(std = 0.02)>, infir2.tp_shard = 0 : i64},
    %wd: tensor<64x32xbf16> {infir2.param = #infir2.param<"down", normal(std = 0.02)>, infir2.tp_shard = 1 : i64}) -> tensor<4x64xbf16> {
  %xin = infir2.tp_copy %x {size = 2 : i64} : tensor<4x64xbf16>
  %h = infir2.matmul %xin, %wg {transpose_rhs} : tensor<4x64xbf16>, tensor<32x64xbf16> -> tensor<4x32xbf16>
  %d = infir2.matmul %h, %wd {transpose_rhs} : tensor<4x32xbf16>, tensor<64x32xbf16> -> tensor<4x64xbf16>
  // expected-error@+1 {{operand #0 is a partial sum: a partial sum must be summed by 'infir2.tp_reduce' first}}
  %e = infir2.matmul %d, %w {transpose_rhs} : tensor<4x64xbf16>, tensor<64x64xbf16> -> tensor<4x64xbf16>
  return %e : tensor<4x64xbf16>
}
}

// -----

// expected-error@+1 {{'infir2.tensor_parallel' is an integer of at least 2 (the group's size) on the module}}
func.func @f() attributes {infir2.tensor_parallel = 2 : i64} {
  return
}

// -----

func.func @norm(%g: tensor<4xf32>, %s: tensor<f32>) -> tensor<f32> {
  // expected-error@+1 {{tp_shards (2) counts more gradients than it has (1)}}
  %n = infir2.global_norm %g scale %s {tp_shards = 2 : i64} : tensor<4xf32>
  return %n : tensor<f32>
}

// -----

// A vocabulary-parallel loss on whole logits.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%logits: tensor<2x8x32xf32>, %targets: tensor<2x8xi32>) -> tensor<f32> {
  // expected-error@+1 {{operand #0 is a whole tensor: with vocab_shards, each rank holds its slice of the vocabulary (dimension 2)}}
  %loss = infir2.cross_entropy %logits, %targets {vocab_shards = 2 : i64} : tensor<2x8x32xf32>, tensor<2x8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
}

// -----

// An embedding split over more ranks than the group has.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%ids: tensor<2x8xi32>,
    %embed: tensor<32x64xbf16> {infir2.param = #infir2.param<"embed", normal(std = 0.02)>, infir2.tp_shard = 0 : i64}) -> tensor<2x8x64xbf16> {
  // expected-error@+1 {{splits the vocabulary over 3 ranks in a module of tensor-parallel size 2}}
  %h = infir2.embedding %embed[%ids] {vocab_shards = 3 : i64} : tensor<32x64xbf16>[tensor<2x8xi32>] -> tensor<2x8x64xbf16>
  %s = infir2.tp_reduce %h {size = 2 : i64} : tensor<2x8x64xbf16>
  return %s : tensor<2x8x64xbf16>
}
}

// -----

// A sharded table looked up as if it were whole.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%ids: tensor<2x8xi32>,
    %embed: tensor<32x64xbf16> {infir2.param = #infir2.param<"embed", normal(std = 0.02)>, infir2.tp_shard = 0 : i64}) -> tensor<2x8x64xbf16> {
  // expected-error@+1 {{operand #0 is a shard: 'infir2.embedding' runs on whole tensors (insert the collective that makes it whole)}}
  %h = infir2.embedding %embed[%ids] : tensor<32x64xbf16>[tensor<2x8xi32>] -> tensor<2x8x64xbf16>
  return %h : tensor<2x8x64xbf16>
}
}

// -----

// A vocabulary-parallel embedding's rows used before the ranks' are summed.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%ids: tensor<2x8xi32>, %r: tensor<2x8x64xbf16>,
    %embed: tensor<32x64xbf16> {infir2.param = #infir2.param<"embed", normal(std = 0.02)>, infir2.tp_shard = 0 : i64}) -> tensor<2x8x64xbf16> {
  %h = infir2.embedding %embed[%ids] {vocab_shards = 2 : i64} : tensor<32x64xbf16>[tensor<2x8xi32>] -> tensor<2x8x64xbf16>
  // expected-error@+1 {{operand #1 is a partial sum: a partial sum must be summed by 'infir2.tp_reduce' first}}
  %s = infir2.add %r, %h : tensor<2x8x64xbf16>, tensor<2x8x64xbf16>
  return %s : tensor<2x8x64xbf16>
}
}

// -----

// Sequence parallelism: an all-gather of a whole tensor.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%x: tensor<2x4x64xbf16>) -> tensor<2x8x64xbf16> {
  // expected-error@+1 {{operand #0 is a whole tensor: 'infir2.tp_all_gather' puts slices of the sequence together}}
  %g = infir2.tp_all_gather %x {size = 2 : i64, dim = 1 : i64} : tensor<2x4x64xbf16> -> tensor<2x8x64xbf16>
  return %g : tensor<2x8x64xbf16>
}
}

// -----

// A reduce-scatter of a whole tensor (it would be counted twice).
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%x: tensor<2x8x64xbf16>) -> tensor<2x4x64xbf16> {
  // expected-error@+1 {{operand #0 is a whole tensor: 'infir2.tp_reduce_scatter' sums partial sums}}
  %s = infir2.tp_reduce_scatter %x {size = 2 : i64, dim = 1 : i64} : tensor<2x8x64xbf16> -> tensor<2x4x64xbf16>
  return %s : tensor<2x4x64xbf16>
}
}

// -----

// A norm on a slice of the sequence whose weight did not enter: its
// gradient would be one slice's.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%ids: tensor<2x8xi32>,
    %embed: tensor<32x64xbf16> {infir2.param = #infir2.param<"embed", normal(std = 0.02)>, infir2.tp_shard = 0 : i64},
    %ln: tensor<64xbf16> {infir2.param = #infir2.param<"norm", ones>}) -> tensor<2x8x64xbf16> {
  %h = infir2.embedding %embed[%ids] {vocab_shards = 2 : i64} : tensor<32x64xbf16>[tensor<2x8xi32>] -> tensor<2x8x64xbf16>
  %s = infir2.tp_reduce_scatter %h {size = 2 : i64, dim = 1 : i64} : tensor<2x8x64xbf16> -> tensor<2x4x64xbf16>
  // expected-error@+1 {{operand #1 is a whole tensor: a norm on a slice of the sequence reads its weight through 'infir2.tp_copy', so that the weight's gradient is summed over the slices}}
  %n = infir2.rms_norm %s, %ln {epsilon = 1.0e-06 : f64} : tensor<2x4x64xbf16>, tensor<64xbf16>
  %g = infir2.tp_all_gather %n {size = 2 : i64, dim = 1 : i64} : tensor<2x4x64xbf16> -> tensor<2x8x64xbf16>
  return %g : tensor<2x8x64xbf16>
}
}

// -----

// A slice of the sequence added to a whole tensor.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%ids: tensor<2x8xi32>, %r: tensor<2x4x64xbf16>,
    %embed: tensor<32x64xbf16> {infir2.param = #infir2.param<"embed", normal(std = 0.02)>, infir2.tp_shard = 0 : i64}) -> tensor<2x4x64xbf16> {
  %h = infir2.embedding %embed[%ids] {vocab_shards = 2 : i64} : tensor<32x64xbf16>[tensor<2x8xi32>] -> tensor<2x8x64xbf16>
  %s = infir2.tp_reduce_scatter %h {size = 2 : i64, dim = 1 : i64} : tensor<2x8x64xbf16> -> tensor<2x4x64xbf16>
  // expected-error@+1 {{operand #1 is a whole tensor: the op mixes a slice of the sequence and a whole tensor}}
  %a = infir2.add %s, %r : tensor<2x4x64xbf16>, tensor<2x4x64xbf16>
  return %a : tensor<2x4x64xbf16>
}
}

// -----

// An embedding table sharded along its rows' width, not the vocabulary.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%ids: tensor<2x8xi32>,
    %embed: tensor<64x32xbf16> {infir2.param = #infir2.param<"embed", normal(std = 0.02)>, infir2.tp_shard = 1 : i64}) -> tensor<2x8x32xbf16> {
  // expected-error@+1 {{operand #0 is a shard: with vocab_shards, each rank holds its slice of the vocabulary (dimension 0)}}
  %h = infir2.embedding %embed[%ids] {vocab_shards = 2 : i64} : tensor<64x32xbf16>[tensor<2x8xi32>] -> tensor<2x8x32xbf16>
  %s = infir2.tp_reduce %h {size = 2 : i64} : tensor<2x8x32xbf16>
  return %s : tensor<2x8x32xbf16>
}
}

// -----

// Sequence parallelism: an op that needs the whole sequence reads a slice.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%ids: tensor<2x8xi32>,
    %embed: tensor<32x64xbf16> {infir2.param = #infir2.param<"embed", normal(std = 0.02)>, infir2.tp_shard = 0 : i64}) -> tensor<2x8x64xbf16> {
  %h = infir2.embedding %embed[%ids] {vocab_shards = 2 : i64} : tensor<32x64xbf16>[tensor<2x8xi32>] -> tensor<2x8x64xbf16>
  %s = infir2.tp_reduce_scatter %h {size = 2 : i64, dim = 1 : i64} : tensor<2x8x64xbf16> -> tensor<2x4x64xbf16>
  // expected-error@+1 {{operand #0 is a slice of the sequence: 'infir2.silu' needs the whole sequence (put it together with 'infir2.tp_all_gather' first)}}
  %a = infir2.silu %s : tensor<2x4x64xbf16>
  %g = infir2.tp_all_gather %a {size = 2 : i64, dim = 1 : i64} : tensor<2x4x64xbf16> -> tensor<2x8x64xbf16>
  return %g : tensor<2x8x64xbf16>
}
}

// -----

// A GEMM of a slice of the sequence.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%ids: tensor<2x8xi32>, %w: tensor<64x64xbf16>,
    %embed: tensor<32x64xbf16> {infir2.param = #infir2.param<"embed", normal(std = 0.02)>, infir2.tp_shard = 0 : i64}) -> tensor<2x4x64xbf16> {
  %h = infir2.embedding %embed[%ids] {vocab_shards = 2 : i64} : tensor<32x64xbf16>[tensor<2x8xi32>] -> tensor<2x8x64xbf16>
  %s = infir2.tp_reduce_scatter %h {size = 2 : i64, dim = 1 : i64} : tensor<2x8x64xbf16> -> tensor<2x4x64xbf16>
  // expected-error@+1 {{operand #0 is a slice of the sequence: a GEMM reads a slice of the sequence only once 'infir2.tp_all_gather' has put it together}}
  %m = infir2.matmul %s, %w {transpose_rhs} : tensor<2x4x64xbf16>, tensor<64x64xbf16> -> tensor<2x4x64xbf16>
  return %m : tensor<2x4x64xbf16>
}
}

// -----

// A reduce-scatter along another dimension than the sequence.
module attributes {infir2.tensor_parallel = 2 : i64} {
func.func @forward(%ids: tensor<2x8xi32>,
    %embed: tensor<32x64xbf16> {infir2.param = #infir2.param<"embed", normal(std = 0.02)>, infir2.tp_shard = 0 : i64}) -> tensor<2x8x32xbf16> {
  %h = infir2.embedding %embed[%ids] {vocab_shards = 2 : i64} : tensor<32x64xbf16>[tensor<2x8xi32>] -> tensor<2x8x64xbf16>
  // expected-error@+1 {{splits dimension 2: sequence parallelism splits dimension 1 ([batch, seq, hidden])}}
  %s = infir2.tp_reduce_scatter %h {size = 2 : i64, dim = 2 : i64} : tensor<2x8x64xbf16> -> tensor<2x8x32xbf16>
  return %s : tensor<2x8x32xbf16>
}
}
