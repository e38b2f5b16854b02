// RUN: infir2-opt %s --split-input-file --canonicalize | FileCheck %s

// Tests that a reshape to the same type folds away.
// CHECK-LABEL: func.func @reshape_identity
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
// CHECK-NOT: infir2.reshape
// CHECK: return %[[X]]
func.func @reshape_identity(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = infir2.reshape %x : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that a chain of reshapes folds to one reshape of the source.
// CHECK-LABEL: func.func @reshape_chain
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.+]] = infir2.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<24xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_chain(%x: tensor<2x3x4xf32>) -> tensor<24xf32> {
  %0 = infir2.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = infir2.reshape %0 : tensor<6x4xf32> -> tensor<24xf32>
  return %1 : tensor<24xf32>
}

// -----

// Tests that a reshape round trip folds away entirely.
// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK-NOT: infir2.reshape
// CHECK: return %[[X]]
func.func @reshape_round_trip(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = infir2.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = infir2.reshape %0 : tensor<6x4xf32> -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// Tests that an identity transpose folds away.
// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK-NOT: infir2.transpose
// CHECK: return %[[X]]
func.func @transpose_identity(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = infir2.transpose %x [0, 1, 2] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Tests that two transposes compose into one: [1, 2, 0] then [1, 2, 0]
// reads source dimensions [2, 0, 1].
// CHECK-LABEL: func.func @transpose_compose
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.+]] = infir2.transpose %[[X]] [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[T]]
func.func @transpose_compose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = infir2.transpose %x [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = infir2.transpose %0 [1, 2, 0] : tensor<3x4x2xf32> -> tensor<4x2x3xf32>
  return %1 : tensor<4x2x3xf32>
}

// -----

// Tests that a transpose and its inverse fold away.
// CHECK-LABEL: func.func @transpose_inverse
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>)
// CHECK-NOT: infir2.transpose
// CHECK: return %[[X]]
func.func @transpose_inverse(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = infir2.transpose %x [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  %1 = infir2.transpose %0 [1, 0] : tensor<3x2xf32> -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// Tests that a transpose of a reshape is left alone (the fold must not fire).
// CHECK-LABEL: func.func @transpose_of_reshape
// CHECK: infir2.reshape
// CHECK: infir2.transpose
func.func @transpose_of_reshape(%x: tensor<6xf32>) -> tensor<3x2xf32> {
  %0 = infir2.reshape %x : tensor<6xf32> -> tensor<2x3xf32>
  %1 = infir2.transpose %0 [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  return %1 : tensor<3x2xf32>
}
