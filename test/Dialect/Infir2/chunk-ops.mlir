// RUN: infir2-opt %s --split-input-file | FileCheck %s
// RUN: infir2-opt %s --split-input-file --mlir-print-op-generic | infir2-opt --split-input-file | FileCheck %s

// Tests that the ops of a loss in chunks round-trip: rows of token ids, a
// mask and hidden states, the batch's loss weight, a chunk's loss and its
// gradient divided by it, and rows stacked back.
// CHECK-LABEL: func.func @chunk
// CHECK: %[[T:.+]] = infir2.slice %arg1[4] : tensor<8xi32> -> tensor<4xi32>
// CHECK: %[[M:.+]] = infir2.slice %arg2[4] : tensor<8xi1> -> tensor<4xi1>
// CHECK: %[[W:.+]] = infir2.loss_weight %arg1 mask %arg2 {ignore_index = 0 : i64, infir2.chunked = "why"} : tensor<8xi32>, tensor<8xi1> -> tensor<f32>
// CHECK: %[[V:.+]] = infir2.loss_weight %arg1 : tensor<8xi32> -> tensor<f32>
// CHECK: infir2.cross_entropy %arg0, %[[T]] mask %[[M]] divisor %[[W]] : tensor<4x16xf32>, tensor<4xi32>, tensor<4xi1> -> tensor<f32>
// CHECK: infir2.cross_entropy %arg0, %[[T]] divisor %[[V]] : tensor<4x16xf32>, tensor<4xi32> -> tensor<f32>
// CHECK: infir2.cross_entropy_grad %arg0, %[[T]], %[[V]] mask %[[M]] divisor %[[W]] : tensor<4x16xf32>, tensor<4xi32>, tensor<f32>, tensor<4xi1> -> tensor<4x16xbf16>
// CHECK: infir2.concat %arg3, %arg3, %arg4 : tensor<2x3x8xbf16>, tensor<2x3x8xbf16>, tensor<1x3x8xbf16> -> tensor<5x3x8xbf16>
func.func @chunk(%l: tensor<4x16xf32>, %t: tensor<8xi32>, %m: tensor<8xi1>, %a: tensor<2x3x8xbf16>, %b: tensor<1x3x8xbf16>) -> tensor<5x3x8xbf16> {
  %t1 = infir2.slice %t[4] : tensor<8xi32> -> tensor<4xi32>
  %m1 = infir2.slice %m[4] : tensor<8xi1> -> tensor<4xi1>
  %w = infir2.loss_weight %t mask %m {ignore_index = 0 : i64, infir2.chunked = "why"} : tensor<8xi32>, tensor<8xi1> -> tensor<f32>
  %v = infir2.loss_weight %t : tensor<8xi32> -> tensor<f32>
  %0 = infir2.cross_entropy %l, %t1 mask %m1 divisor %w : tensor<4x16xf32>, tensor<4xi32>, tensor<4xi1> -> tensor<f32>
  %1 = infir2.cross_entropy %l, %t1 divisor %v : tensor<4x16xf32>, tensor<4xi32> -> tensor<f32>
  %2 = infir2.cross_entropy_grad %l, %t1, %v mask %m1 divisor %w : tensor<4x16xf32>, tensor<4xi32>, tensor<f32>, tensor<4xi1> -> tensor<4x16xbf16>
  %3 = infir2.concat %a, %a, %b : tensor<2x3x8xbf16>, tensor<2x3x8xbf16>, tensor<1x3x8xbf16> -> tensor<5x3x8xbf16>
  return %3 : tensor<5x3x8xbf16>
}
