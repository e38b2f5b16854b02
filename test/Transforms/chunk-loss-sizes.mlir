// RUN: infir2-opt %s --infir2-chunk-loss="tokens=4" --split-input-file | FileCheck %s --check-prefix=RAGGED
// RUN: infir2-opt %s --infir2-chunk-loss="chunk-bytes=4096" --split-input-file | FileCheck %s --check-prefix=AUTO

// tokens=4 of 6 tokens: a chunk of 4 and a last one of 2; the input
// gradient's rows are stacked from both.
// RAGGED-LABEL: func.func @six
// RAGGED: infir2.loss_weight {{.*}}infir2.chunked = "the LM head and the loss in 2 chunks of 4 tokens (the last of 2): 256 B of logits live at a time instead of 384 B"
// RAGGED: infir2.slice %{{.+}}[0] : tensor<6x8xbf16> -> tensor<4x8xbf16>
// RAGGED: infir2.slice %{{.+}}[4] : tensor<6x8xbf16> -> tensor<2x8xbf16>
// RAGGED: infir2.cross_entropy_grad {{.*}} -> tensor<2x16xbf16>
// RAGGED: infir2.concat %{{.+}}, %{{.+}} : tensor<4x8xbf16>, tensor<2x8xbf16> -> tensor<6x8xbf16>
// chunk-bytes=4096 fits 64 rows of 16 FP32 logits: 6 tokens stay whole.
// AUTO-LABEL: func.func @six
// AUTO-NOT: infir2.slice
// AUTO: infir2.cross_entropy %{{.+}} : tensor<6x16xf32>, tensor<6xi32> -> tensor<f32>
func.func @six(%h: tensor<6x8xbf16>, %w: tensor<16x8xbf16>, %t: tensor<6xi32>) -> (tensor<f32>, tensor<6x8xbf16>) {
  %l = infir2.matmul %h, %w {transpose_rhs} : tensor<6x8xbf16>, tensor<16x8xbf16> -> tensor<6x16xf32>
  %loss = infir2.cross_entropy %l, %t : tensor<6x16xf32>, tensor<6xi32> -> tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %dl = infir2.cross_entropy_grad %l, %t, %one : tensor<6x16xf32>, tensor<6xi32>, tensor<f32> -> tensor<6x16xbf16>
  %dh = infir2.matmul %dl, %w : tensor<6x16xbf16>, tensor<16x8xbf16> -> tensor<6x8xbf16>
  return %loss, %dh : tensor<f32>, tensor<6x8xbf16>
}

// -----

// 134 tokens (2 x 67) with room for 64 rows: no divisor of 134 between 32
// and 64, so chunks of 64 and a last one of 6, not 67 chunks of 2.
// AUTO-LABEL: func.func @awkward
// AUTO: infir2.chunked = "the LM head and the loss in 3 chunks of 64 tokens (the last of 6): 4.0 KiB of logits live at a time instead of 8.4 KiB"
// AUTO-COUNT-3: infir2.cross_entropy %{{.+}} divisor
func.func @awkward(%h: tensor<2x67x8xbf16>, %w: tensor<16x8xbf16>, %t: tensor<2x67xi32>) -> tensor<f32> {
  %l = infir2.matmul %h, %w {transpose_rhs} : tensor<2x67x8xbf16>, tensor<16x8xbf16> -> tensor<2x67x16xf32>
  %loss = infir2.cross_entropy %l, %t : tensor<2x67x16xf32>, tensor<2x67xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// An empty vocabulary: nothing to chunk, no division by its zero bytes.
// AUTO-LABEL: func.func @no_vocab
// AUTO-NOT: infir2.slice
func.func @no_vocab(%h: tensor<6x8xbf16>, %w: tensor<0x8xbf16>, %t: tensor<6xi32>) -> tensor<f32> {
  %l = infir2.matmul %h, %w {transpose_rhs} : tensor<6x8xbf16>, tensor<0x8xbf16> -> tensor<6x0xf32>
  %loss = infir2.cross_entropy %l, %t : tensor<6x0xf32>, tensor<6xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
