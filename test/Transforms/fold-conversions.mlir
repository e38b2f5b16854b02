// RUN: infir2-opt %s --infir2-fold-conversions --split-input-file | FileCheck %s

// The LM head's FP32 logits: their gradient, read only by a conversion to
// BF16, is made in BF16 (the same bits; no FP32 gradient).
// CHECK-LABEL: func.func @to_bf16
// CHECK: %[[G:.+]] = infir2.cross_entropy_grad %arg0, %arg1, %arg2 mask %arg3 : tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32>, tensor<2x4xf32> -> tensor<2x4x8xbf16>
// CHECK-NOT: infir2.convert
// CHECK: return %[[G]]
func.func @to_bf16(%l: tensor<2x4x8xf32>, %t: tensor<2x4xi32>, %dl: tensor<f32>, %m: tensor<2x4xf32>) -> tensor<2x4x8xbf16> {
  %g = infir2.cross_entropy_grad %l, %t, %dl mask %m : tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32>, tensor<2x4xf32>
  %b = infir2.convert %g : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
  return %b : tensor<2x4x8xbf16>
}

// -----

// Left alone: BF16 logits' gradient widened to FP32. The runtimes compute
// it in FP32 and round it to BF16 first; folding would drop that rounding.
// CHECK-LABEL: func.func @from_bf16
// CHECK: %[[G:.+]] = infir2.cross_entropy_grad {{.+}} : tensor<2x4x8xbf16>, tensor<2x4xi32>, tensor<f32>{{$}}
// CHECK: infir2.convert %[[G]] : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
func.func @from_bf16(%l: tensor<2x4x8xbf16>, %t: tensor<2x4xi32>, %dl: tensor<f32>) -> tensor<2x4x8xf32> {
  %g = infir2.cross_entropy_grad %l, %t, %dl : tensor<2x4x8xbf16>, tensor<2x4xi32>, tensor<f32>
  %w = infir2.convert %g : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
  return %w : tensor<2x4x8xf32>
}

// -----

// Left alone: the FP32 gradient has another reader.
// CHECK-LABEL: func.func @two_readers
// CHECK: %[[G:.+]] = infir2.cross_entropy_grad {{.+}} : tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32>{{$}}
// CHECK: infir2.convert %[[G]]
func.func @two_readers(%l: tensor<2x4x8xf32>, %t: tensor<2x4xi32>, %dl: tensor<f32>) -> (tensor<2x4x8xbf16>, tensor<2x4x8xf32>) {
  %g = infir2.cross_entropy_grad %l, %t, %dl : tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32>
  %b = infir2.convert %g : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
  return %b, %g : tensor<2x4x8xbf16>, tensor<2x4x8xf32>
}

// -----

// Left alone: a conversion to f16 (the runtime writes the gradient in f32
// or bf16), and a conversion of another op's result.
// CHECK-LABEL: func.func @others
// CHECK: infir2.cross_entropy_grad {{.+}} : tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32>{{$}}
// CHECK: infir2.convert {{.+}} -> tensor<2x4x8xf16>
// CHECK: infir2.convert {{.+}} -> tensor<2x4x8xbf16>
func.func @others(%l: tensor<2x4x8xf32>, %t: tensor<2x4xi32>, %dl: tensor<f32>, %x: tensor<2x4x8xf32>) -> (tensor<2x4x8xf16>, tensor<2x4x8xbf16>) {
  %g = infir2.cross_entropy_grad %l, %t, %dl : tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32>
  %h = infir2.convert %g : tensor<2x4x8xf32> -> tensor<2x4x8xf16>
  %s = infir2.silu %x : tensor<2x4x8xf32>
  %b = infir2.convert %s : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
  return %h, %b : tensor<2x4x8xf16>, tensor<2x4x8xbf16>
}
