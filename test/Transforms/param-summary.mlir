// RUN: infir2-opt %s --split-input-file --infir2-param-summary=to-stdout -o /dev/null | FileCheck %s
// RUN: infir2-opt %s --split-input-file --infir2-param-summary 2>&1 >/dev/null | FileCheck %s
// RUN: infir2-opt %examples/tiny-qwen/model.mlir --infir2-param-summary=to-stdout -o /dev/null | FileCheck %s --check-prefix=TINY
// RUN: infir2-opt %s --split-input-file --infir2-param-summary -o %t.mlir 2>/dev/null
// RUN: infir2-opt %s --split-input-file -o %t.ref.mlir
// RUN: diff %t.mlir %t.ref.mlir

// Tests one row per parameter, in argument order, skipping non-parameters,
// and the totals (8*4 + 4 + 1*2*3 = 42 elements).
// CHECK: @mixed: 3 parameter tensors, 42 parameters
// CHECK-NEXT:   w    8x4    bf16  normal(std = 0.5)
// CHECK-NEXT:   b    4      f32   zeros
// CHECK-NEXT:   cube 1x2x3  f64   ones
// CHECK-NOT: ids
func.func @mixed(%w: tensor<8x4xbf16> {infir2.param = #infir2.param<"w", normal(std = 0.5)>},
                 %ids: tensor<2xi32>,
                 %b: tensor<4xf32> {infir2.param = #infir2.param<"b", zeros>},
                 %c: tensor<1x2x3xf64> {infir2.param = #infir2.param<"cube", ones>}) {
  return
}

// -----

// Tests that a function without parameters prints nothing.
// CHECK-NOT: @no_params
func.func @no_params(%x: tensor<4xf32>) {
  return
}

// The example's count, worked out by hand from its architecture:
//   embed 256*256 = 65,536; final norm 256
//   per layer: 2 norms 512; q 256*256 + 256; k, v 2*(128*256 + 128);
//              o 256*256; gate, up, down 3*768*256        = 787,456
//   65,536 + 256 + 2 * 787,456 = 1,640,704
// TINY: @forward: 26 parameter tensors, 1,640,704 parameters
// TINY-NEXT: model.embed_tokens.weight 256x256 bf16 normal(std = 0.02)
// TINY: model.layers.1.mlp.down_proj.weight 256x768 bf16 normal(std = 0.02)
// TINY-NEXT: model.norm.weight 256 bf16 ones
