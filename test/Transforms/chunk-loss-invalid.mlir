// RUN: infir2-opt %s --infir2-chunk-loss="tokens=4" --verify-diagnostics
// RUN: not infir2-opt %s --infir2-chunk-loss="tokens=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not infir2-opt %s --infir2-chunk-loss="chunk-bytes=0" 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// A chunk size asked for, on a loss the pass does not chunk (its logits
// are returned too): a warning says so, and the loss stays whole.
func.func @logits_returned(%h: tensor<8x8xbf16>, %w: tensor<16x8xbf16>, %t: tensor<8xi32>) -> (tensor<f32>, tensor<8x16xf32>) {
  %l = infir2.matmul %h, %w {transpose_rhs} : tensor<8x8xbf16>, tensor<16x8xbf16> -> tensor<8x16xf32>
  // expected-warning@+1 {{--infir2-chunk-loss: tokens=4 is not applied to this loss: its logits are not a GEMM's read by the loss and its gradient alone, as the recipes make them}}
  %loss = infir2.cross_entropy %l, %t : tensor<8x16xf32>, tensor<8xi32> -> tensor<f32>
  return %loss, %l : tensor<f32>, tensor<8x16xf32>
}

// NEGATIVE: --infir2-chunk-loss: tokens must be at least 0 and chunk-bytes positive
