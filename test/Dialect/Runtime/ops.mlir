// RUN: infir2-opt %s | FileCheck %s
// RUN: infir2-opt %s --mlir-print-op-generic | infir2-opt | FileCheck %s

// Tests that a planned step round-trips.
// CHECK: module attributes {infir2rt.manifest = "infir2-model 1"}
// CHECK-LABEL: func.func @infir2_train_step
// CHECK: infir2rt.call "rms_norm" [#infir2rt.buffer<scratch, 0, tensor<4x256xbf16>>, #infir2rt.buffer<state, 64, tensor<256xbf16>>, #infir2rt.buffer<scratch, 2048, tensor<4x256xbf16>>] attributes [1.000000e-06] at "infir2.rms_norm at model.mlir:3:5"
// CHECK: infir2rt.call "copy" {{.*}} attributes [] at "result output loss"
module attributes {infir2rt.manifest = "infir2-model 1"} {
  func.func @infir2_train_step() {
    infir2rt.call "rms_norm" [#infir2rt.buffer<scratch, 0, tensor<4x256xbf16>>, #infir2rt.buffer<state, 64, tensor<256xbf16>>, #infir2rt.buffer<scratch, 2048, tensor<4x256xbf16>>] attributes [1.0e-6] at "infir2.rms_norm at model.mlir:3:5"
    infir2rt.call "copy" [#infir2rt.buffer<scratch, 4096, tensor<f32>>, #infir2rt.buffer<state, 0, tensor<f32>>] attributes [] at "result output loss"
    return
  }
}
