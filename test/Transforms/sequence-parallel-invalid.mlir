// RUN: infir2-opt %s --split-input-file --infir2-tensor-parallel="size=2 fp8-block=0 sequence-parallel=true" --verify-diagnostics
// RUN: not infir2-opt %S/Inputs/tp-layer.mlir --bf16-recipe="sequence-parallel=true" 2>&1 | FileCheck %s --check-prefix=ALONE
// ALONE: sequence-parallel splits the sequence over a tensor-parallel group: set tensor-parallel to 2 or more
// RUN: not infir2-opt %S/Inputs/tp-layer.mlir --infir2-tensor-parallel="size=1 sequence-parallel=true" 2>&1 | FileCheck %s --check-prefix=ONE
// ONE: error: --infir2-tensor-parallel: sequence-parallel splits the sequence over a group of 2 or more ranks (size=1)

// --infir2-tensor-parallel with sequence-parallel=true: what it refuses.

// A sequence of 3 positions does not split over 2 ranks.
func.func @forward(%ids: tensor<2x3xi32>, %targets: tensor<2x3xi32>,
    %embed: tensor<64x128xbf16> {infir2.param = #infir2.param<"embed", normal(std = 0.02)>},
    %lnf: tensor<128xbf16> {infir2.param = #infir2.param<"norm", ones>}) -> tensor<f32> {
  // expected-error@+1 {{cannot split the sequence of 'tensor<2x3x128xbf16>' over 2 ranks: its 3 positions do not divide}}
  %h = infir2.embedding %embed[%ids] : tensor<64x128xbf16>[tensor<2x3xi32>] -> tensor<2x3x128xbf16>
  %f = infir2.rms_norm %h, %lnf {epsilon = 1.0e-06 : f64} : tensor<2x3x128xbf16>, tensor<128xbf16>
  %logits = infir2.matmul %f, %embed {transpose_rhs} : tensor<2x3x128xbf16>, tensor<64x128xbf16> -> tensor<2x3x64xf32>
  %loss = infir2.cross_entropy %logits, %targets : tensor<2x3x64xf32>, tensor<2x3xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// An op other than a norm, a residual add, a product or a conversion reads
// the residual stream between the regions.
func.func @forward(%ids: tensor<2x4xi32>, %targets: tensor<2x4xi32>,
    %embed: tensor<64x128xbf16> {infir2.param = #infir2.param<"embed", normal(std = 0.02)>},
    %lnf: tensor<128xbf16> {infir2.param = #infir2.param<"norm", ones>}) -> tensor<f32> {
  %h = infir2.embedding %embed[%ids] : tensor<64x128xbf16>[tensor<2x4xi32>] -> tensor<2x4x128xbf16>
  // expected-error@+1 {{reads the residual stream, which sequence parallelism splits by positions: only norms, residual adds, products and conversions of whole split tensors run between the regions}}
  %s = infir2.silu %h : tensor<2x4x128xbf16>
  %f = infir2.rms_norm %s, %lnf {epsilon = 1.0e-06 : f64} : tensor<2x4x128xbf16>, tensor<128xbf16>
  %logits = infir2.matmul %f, %embed {transpose_rhs} : tensor<2x4x128xbf16>, tensor<64x128xbf16> -> tensor<2x4x64xf32>
  %loss = infir2.cross_entropy %logits, %targets : tensor<2x4x64xf32>, tensor<2x4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// The forward returns a tensor of the residual stream: it would be a slice.
// expected-error@+1 {{returns a tensor sequence parallelism splits by positions}}
func.func @forward(%ids: tensor<2x4xi32>, %targets: tensor<2x4xi32>,
    %embed: tensor<64x128xbf16> {infir2.param = #infir2.param<"embed", normal(std = 0.02)>},
    %lnf: tensor<128xbf16> {infir2.param = #infir2.param<"norm", ones>}) -> (tensor<f32>, tensor<2x4x128xbf16>) {
  %h = infir2.embedding %embed[%ids] : tensor<64x128xbf16>[tensor<2x4xi32>] -> tensor<2x4x128xbf16>
  %f = infir2.rms_norm %h, %lnf {epsilon = 1.0e-06 : f64} : tensor<2x4x128xbf16>, tensor<128xbf16>
  %logits = infir2.matmul %f, %embed {transpose_rhs} : tensor<2x4x128xbf16>, tensor<64x128xbf16> -> tensor<2x4x64xf32>
  %loss = infir2.cross_entropy %logits, %targets : tensor<2x4x64xf32>, tensor<2x4xi32> -> tensor<f32>
  return %loss, %h : tensor<f32>, tensor<2x4x128xbf16>
}

// -----

// A vocabulary the size does not divide: without sequence parallelism it
// would stay whole on every rank; with it, it is refused, saying so.
func.func @forward(%ids: tensor<2x4xi32>, %targets: tensor<2x4xi32>,
    %embed: tensor<63x128xbf16> {infir2.param = #infir2.param<"embed", normal(std = 0.02)>},
    %lnf: tensor<128xbf16> {infir2.param = #infir2.param<"norm", ones>}) -> tensor<f32> {
  // expected-error@+2 {{cannot split dimension 0 (63) of 'embed' over 2 ranks: it does not divide; sizes that work: 3, 7, 9, 21, 63}}
  // expected-remark@+1 {{without sequence parallelism a vocabulary that does not divide stays whole on every rank}}
  %h = infir2.embedding %embed[%ids] : tensor<63x128xbf16>[tensor<2x4xi32>] -> tensor<2x4x128xbf16>
  %f = infir2.rms_norm %h, %lnf {epsilon = 1.0e-06 : f64} : tensor<2x4x128xbf16>, tensor<128xbf16>
  %logits = infir2.matmul %f, %embed {transpose_rhs} : tensor<2x4x128xbf16>, tensor<63x128xbf16> -> tensor<2x4x63xf32>
  %loss = infir2.cross_entropy %logits, %targets : tensor<2x4x63xf32>, tensor<2x4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
