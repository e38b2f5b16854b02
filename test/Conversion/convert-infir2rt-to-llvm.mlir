// RUN: infir2-opt %s --convert-infir2rt-to-llvm | FileCheck %s

// Tests that each step becomes an llvm.func of the runtime context returning
// a status, each call a call of infir2rt_<entry>(ctx, desc, where) that
// returns its status at once when non-zero, and the manifest the exported
// constant infir2_model_manifest. Descriptor words (runtime ABI.h): the
// operand and attribute counts; per operand its region (0 state, 1 scratch),
// element type (0 f32, 1 bf16), rank, byte offset, element count and shape
// padded with ones to rank 7; then each attribute's FP64 bits (1.5 is
// 0x3FF8000000000000 = 4609434218613702656).

// CHECK-DAG: llvm.func @infir2rt_fill(!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-DAG: llvm.func @infir2rt_copy(!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-DAG: llvm.mlir.global private constant @[[FILL:desc_[0-9]+]](dense<[1, 1, 1, 0, 2, 64, 6, 2, 3, 1, 1, 1, 1, 1, 4609434218613702656]> : tensor<15xi64>)
// CHECK-DAG: llvm.mlir.global private constant @[[WHERE:where_[0-9]+]]("arith.constant at model.mlir:4:10\00")
// CHECK-DAG: llvm.mlir.global private constant @[[COPY:desc_[0-9]+]](dense<[2, 0, 1, 0, 2, 64, 6, 2, 3, 1, 1, 1, 1, 1, 0, 1, 2, 0, 6, 2, 3, 1, 1, 1, 1, 1]> : tensor<26xi64>)
// CHECK-LABEL: llvm.func @infir2_train_step(%arg0: !llvm.ptr) -> i32 {
// CHECK: %[[D:.+]] = llvm.mlir.addressof @[[FILL]] : !llvm.ptr
// CHECK: %[[W:.+]] = llvm.mlir.addressof @[[WHERE]] : !llvm.ptr
// CHECK: %[[S:.+]] = llvm.call @infir2rt_fill(%arg0, %[[D]], %[[W]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK: %[[Z:.+]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: %[[F:.+]] = llvm.icmp "ne" %[[S]], %[[Z]] : i32
// CHECK: llvm.cond_br %[[F]], ^[[FAIL:bb[0-9]+]](%[[S]] : i32), ^[[NEXT:bb[0-9]+]]
// CHECK: ^[[NEXT]]:
// CHECK: llvm.call @infir2rt_copy(%arg0,
// CHECK: llvm.return %{{.+}} : i32
// CHECK: ^[[FAIL]](%[[CODE:.+]]: i32):
// CHECK-NEXT: llvm.return %[[CODE]] : i32
// CHECK: llvm.mlir.global external constant @infir2_model_manifest("the manifest\00")
// CHECK-NOT: func.func
// CHECK-NOT: infir2rt.manifest
module attributes {infir2rt.manifest = "the manifest"} {
  func.func @infir2_train_step() {
    infir2rt.call "fill" [#infir2rt.buffer<scratch, 64, tensor<2x3xf32>>] attributes [1.5] at "arith.constant at model.mlir:4:10"
    infir2rt.call "copy" [#infir2rt.buffer<scratch, 64, tensor<2x3xf32>>, #infir2rt.buffer<state, 0, tensor<2x3xbf16>>] attributes [] at "result param w"
    return
  }
}
