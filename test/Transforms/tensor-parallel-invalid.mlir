// RUN: infir2-opt %s --split-input-file --infir2-tensor-parallel="size=3" --verify-diagnostics
// RUN: not infir2-opt %S/Inputs/tp-layer.mlir --infir2-tensor-parallel="size=4 fp8-block=0" 2>&1 | FileCheck %s --check-prefix=KV
// RUN: not infir2-opt %S/Inputs/tp-layer.mlir --infir2-tensor-parallel="size=2" 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: not infir2-opt %S/Inputs/tp-layer.mlir --infir2-tensor-parallel="size=0" 2>&1 | FileCheck %s --check-prefix=OPTIONS
// RUN: not infir2-opt %S/Inputs/tp-layer.mlir --infir2-tensor-parallel="size=2 fp8-block=-1" 2>&1 | FileCheck %s --check-prefix=OPTIONS
// RUN: not infir2-opt %S/Inputs/tp-layer.mlir --infir2-tensor-parallel="size=2 fp8-block=0" --infir2-tensor-parallel="size=2 fp8-block=0" 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not infir2-opt %S/Inputs/tp-layer.mlir --infir2-autodiff --infir2-tensor-parallel="size=2 fp8-block=0" 2>&1 | FileCheck %s --check-prefix=AFTER
// RUN: not infir2-opt %S/Inputs/tp-layer.mlir --infir2-tensor-parallel="size=2 fp8-block=0 forward=nope" 2>&1 | FileCheck %s --check-prefix=NOFN

// KV: 'infir2.attention' op cannot split its 2 key/value heads over 4 ranks (a grouped-query group stays whole on one rank)
// BLOCK: 'infir2.matmul' op cannot split dimension 0 (128) of 'model.layers.0.self_attn.k_proj.weight' over 2 ranks: each rank's 64 would not be whole 128-wide FP8 blocks, so the scales would differ from the unsharded run's (fp8-block=0 lifts this for the bf16 recipe); sizes that work: none but 1
// OPTIONS: --infir2-tensor-parallel: size must be at least 1 and fp8-block at least 0
// TWICE: error: the module is already tensor-parallel
// AFTER: error: --infir2-tensor-parallel shards the forward before --infir2-autodiff derives the step
// NOFN: error: no function named 'nope' to shard

// Query heads that do not divide by the size.
func.func @forward(%q: tensor<2x8x256xbf16>, %k: tensor<2x8x256xbf16>, %v: tensor<2x8x256xbf16>) -> tensor<2x8x256xbf16> {
  // expected-error@+1 {{cannot split its 4 query heads over 3 ranks (a grouped-query group stays whole on one rank)}}
  %a = infir2.attention %q, %k, %v {causal, num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 64 : i64}
      : tensor<2x8x256xbf16>, tensor<2x8x256xbf16>, tensor<2x8x256xbf16> -> tensor<2x8x256xbf16>
  return %a : tensor<2x8x256xbf16>
}

// -----

// Heads that divide, but a query that is an argument: no projection to split.
func.func @forward(%q: tensor<2x8x384xbf16>, %k: tensor<2x8x384xbf16>, %v: tensor<2x8x384xbf16>) -> tensor<2x8x384xbf16> {
  // expected-error@+1 {{cannot shard its query operand: it is not made by a GEMM of a weight parameter (with transpose_rhs), an optional bias add and rotary embedding, each read once}}
  %a = infir2.attention %q, %k, %v {causal, num_heads = 3 : i64, num_kv_heads = 3 : i64, head_dim = 128 : i64}
      : tensor<2x8x384xbf16>, tensor<2x8x384xbf16>, tensor<2x8x384xbf16> -> tensor<2x8x384xbf16>
  return %a : tensor<2x8x384xbf16>
}

// -----

// An MLP width that does not divide: the error lists the sizes that do and
// keep whole FP8 blocks.
func.func @forward(%x: tensor<4x128xbf16>,
    %wg: tensor<512x128xbf16> {infir2.param = #infir2.param<"gate", normal(std = 0.02)>},
    %wu: tensor<512x128xbf16> {infir2.param = #infir2.param<"up", normal(std = 0.02)>},
    %wd: tensor<128x512xbf16> {infir2.param = #infir2.param<"down", normal(std = 0.02)>}) -> tensor<4x128xbf16> {
  // expected-error@+1 {{cannot split dimension 0 (512) of 'gate' over 3 ranks: it does not divide; sizes that work: 2, 4}}
  %g = infir2.matmul %x, %wg {transpose_rhs} : tensor<4x128xbf16>, tensor<512x128xbf16> -> tensor<4x512xbf16>
  %u = infir2.matmul %x, %wu {transpose_rhs} : tensor<4x128xbf16>, tensor<512x128xbf16> -> tensor<4x512xbf16>
  %a = infir2.swiglu %g, %u : tensor<4x512xbf16>
  %d = infir2.matmul %a, %wd {transpose_rhs} : tensor<4x512xbf16>, tensor<128x512xbf16> -> tensor<4x128xbf16>
  return %d : tensor<4x128xbf16>
}

// -----

// The gate's projection is also returned: it must stay whole.
func.func @forward(%x: tensor<4x128xbf16>,
    %wg: tensor<384x128xbf16> {infir2.param = #infir2.param<"gate", normal(std = 0.02)>},
    %wu: tensor<384x128xbf16> {infir2.param = #infir2.param<"up", normal(std = 0.02)>},
    %wd: tensor<128x384xbf16> {infir2.param = #infir2.param<"down", normal(std = 0.02)>}) -> (tensor<4x128xbf16>, tensor<4x384xbf16>) {
  %g = infir2.matmul %x, %wg {transpose_rhs} : tensor<4x128xbf16>, tensor<384x128xbf16> -> tensor<4x384xbf16>
  %u = infir2.matmul %x, %wu {transpose_rhs} : tensor<4x128xbf16>, tensor<384x128xbf16> -> tensor<4x384xbf16>
  // expected-error@+1 {{cannot shard its gate operand: a value on its way from the projection is also read elsewhere, which needs it whole}}
  %a = infir2.swiglu %g, %u : tensor<4x384xbf16>
  %d = infir2.matmul %a, %wd {transpose_rhs} : tensor<4x384xbf16>, tensor<128x384xbf16> -> tensor<4x128xbf16>
  return %d, %g : tensor<4x128xbf16>, tensor<4x384xbf16>
}

// -----

// The SwiGLU's output read by an op other than a GEMM of a weight.
func.func @forward(%x: tensor<4x128xbf16>,
    %wg: tensor<384x128xbf16> {infir2.param = #infir2.param<"gate", normal(std = 0.02)>},
    %wu: tensor<384x128xbf16> {infir2.param = #infir2.param<"up", normal(std = 0.02)>}) -> tensor<4x384xbf16> {
  %g = infir2.matmul %x, %wg {transpose_rhs} : tensor<4x128xbf16>, tensor<384x128xbf16> -> tensor<4x384xbf16>
  %u = infir2.matmul %x, %wu {transpose_rhs} : tensor<4x128xbf16>, tensor<384x128xbf16> -> tensor<4x384xbf16>
  // expected-error@+1 {{cannot shard its result: 'func.return' reads it, where only GEMMs of a weight parameter (the output or down projection) may}}
  %a = infir2.swiglu %g, %u : tensor<4x384xbf16>
  return %a : tensor<4x384xbf16>
}

// -----

// A vocabulary that does not divide by the size is not an error: it stays
// whole on every rank, saying so (with sequence parallelism it is one:
// sequence-parallel-invalid.mlir).
func.func @forward(%ids: tensor<2x8xi32>,
    %embed: tensor<64x128xbf16> {infir2.param = #infir2.param<"embed", normal(std = 0.02)>}) -> tensor<2x8x128xbf16> {
  // expected-remark@+1 {{the vocabulary of 'embed' (64) does not divide over 3 ranks: it stays whole on every rank (each computes every logit; a vocabulary padded to a multiple of 3 would be split)}}
  %h = infir2.embedding %embed[%ids] : tensor<64x128xbf16>[tensor<2x8xi32>] -> tensor<2x8x128xbf16>
  return %h : tensor<2x8x128xbf16>
}

// -----

// An embedding table that is not a parameter.
func.func @forward(%ids: tensor<2x8xi32>, %table: tensor<63x128xbf16>) -> tensor<2x8x128xbf16> {
  // expected-error@+1 {{cannot split its vocabulary: the table is not a parameter}}
  %h = infir2.embedding %table[%ids] : tensor<63x128xbf16>[tensor<2x8xi32>] -> tensor<2x8x128xbf16>
  return %h : tensor<2x8x128xbf16>
}

// -----

// A vocabulary table read by something other than embeddings and the LM head.
func.func @forward(%ids: tensor<2x8xi32>, %other: tensor<63x128xbf16>,
    %embed: tensor<63x128xbf16> {infir2.param = #infir2.param<"embed", normal(std = 0.02)>}) -> (tensor<2x8x128xbf16>, tensor<63x128xbf16>) {
  // expected-error@+1 {{cannot split the vocabulary of 'embed': 'infir2.add' reads it, where only embeddings and an LM head (a GEMM whose logits feed the loss) may}}
  %h = infir2.embedding %embed[%ids] : tensor<63x128xbf16>[tensor<2x8xi32>] -> tensor<2x8x128xbf16>
  %s = infir2.add %embed, %other : tensor<63x128xbf16>, tensor<63x128xbf16>
  return %h, %s : tensor<2x8x128xbf16>, tensor<63x128xbf16>
}

// -----

// Logits that no LM head GEMM makes: nothing to split by the vocabulary.
func.func @forward(%logits: tensor<2x8x63xf32>, %targets: tensor<2x8xi32>) -> tensor<f32> {
  // expected-error@+1 {{cannot split its vocabulary: the logits are not made by a GEMM of a weight parameter (with transpose_rhs) read by the loss alone}}
  %loss = infir2.cross_entropy %logits, %targets : tensor<2x8x63xf32>, tensor<2x8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
