// RUN: infir2-opt %s --infir2-chunk-loss="tokens=4" --split-input-file --verify-diagnostics
// RUN: infir2-opt %s --infir2-chunk-loss="chunk-bytes=256" | FileCheck %s --check-prefix=AUTO
// RUN: not infir2-opt %s --infir2-chunk-loss="tokens=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not infir2-opt %s --infir2-chunk-loss="chunk-bytes=0" 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// 6 tokens: tokens=4 does not divide them; chunk-bytes=256 takes 3 tokens
// (3 x 16 x 4 bytes fit, 6 x 16 x 4 do not).
// AUTO: infir2.chunked = "the LM head and the loss in 2 chunks of 3 tokens: 192 B of logits live at a time instead of 384 B"
func.func @six_tokens(%h: tensor<6x8xbf16>, %w: tensor<16x8xbf16>, %t: tensor<6xi32>) -> tensor<f32> {
  %l = infir2.matmul %h, %w {transpose_rhs} : tensor<6x8xbf16>, tensor<16x8xbf16> -> tensor<6x16xf32>
  // expected-error@+1 {{--infir2-chunk-loss: tokens=4 does not divide the loss's 6 tokens}}
  %loss = infir2.cross_entropy %l, %t : tensor<6x16xf32>, tensor<6xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// NEGATIVE: --infir2-chunk-loss: tokens must be at least 0 and chunk-bytes positive
