// RUN: infir2-opt %s --infir2-lower-to-runtime | FileCheck %s
// RUN: infir2-opt %s --infir2-lower-to-runtime | infir2-opt -o /dev/null

// Tests the planned steps of test/Transforms/plan-memory.mlir's model (this
// module is its --infir2-plan-memory output) as runtime calls: one per op, on
// the planned buffers (inputs first), with the op's attribute values, then a
// copy of each result into its state slot. The plan becomes the manifest.

// CHECK: module attributes {infir2rt.manifest = "{{.*}}832
// CHECK-NOT: infir2rt.plan
// CHECK-NOT: func.func @forward
// CHECK-NOT: func.func @train_step

// CHECK-LABEL: func.func @infir2_train_step() {
// CHECK-NEXT: infir2rt.call "embedding" [#infir2rt.buffer<state, 0, tensor<8x4xf32>>, #infir2rt.buffer<state, 128, tensor<2x3xi32>>, #infir2rt.buffer<scratch, 0, tensor<2x3x4xf32>>] attributes [1.000000e+00] at "infir2.embedding at {{.*}}lower-to-runtime.mlir:{{[0-9]+}}:{{[0-9]+}}"
// The LM head: transpose_lhs 0, transpose_rhs 1, no accumulator.
// CHECK-NEXT: infir2rt.call "matmul" [#infir2rt.buffer<scratch, 0, tensor<2x3x4xf32>>, #infir2rt.buffer<state, 0, tensor<8x4xf32>>, #infir2rt.buffer<scratch, 128, tensor<2x3x8xf32>>] attributes [0.000000e+00, 1.000000e+00, 0.000000e+00]
// The loss: ignore_index -100, no mask, no divisor.
// CHECK-NEXT: infir2rt.call "cross_entropy" [#infir2rt.buffer<scratch, 128, tensor<2x3x8xf32>>, #infir2rt.buffer<state, 192, tensor<2x3xi32>>, #infir2rt.buffer<scratch, 320, tensor<f32>>] attributes [-1.000000e+02, 0.000000e+00, 0.000000e+00, 1.000000e+00]
// A splat constant is a fill.
// CHECK-NEXT: infir2rt.call "fill" [#infir2rt.buffer<scratch, 384, tensor<f32>>] attributes [1.000000e+00] at "arith.constant at
// CHECK-NEXT: infir2rt.call "cross_entropy_grad"
// CHECK-NEXT: infir2rt.call "matmul" [#infir2rt.buffer<scratch, 448, tensor<2x3x8xf32>>, #infir2rt.buffer<state, 0, tensor<8x4xf32>>, #infir2rt.buffer<scratch, 128, tensor<2x3x4xf32>>] attributes [0.000000e+00, 0.000000e+00, 0.000000e+00]
// Reshapes are views: no call, and the wgrad GEMM reads its operands'
// buffers under the reshaped types.
// CHECK-NEXT: infir2rt.call "matmul" [#infir2rt.buffer<scratch, 448, tensor<6x8xf32>>, #infir2rt.buffer<scratch, 0, tensor<6x4xf32>>, #infir2rt.buffer<scratch, 640, tensor<8x4xf32>>] attributes [1.000000e+00, 0.000000e+00, 0.000000e+00]
// CHECK-NEXT: infir2rt.call "embedding_grad"
// CHECK-NEXT: infir2rt.call "add"
// CHECK-NEXT: infir2rt.call "add" [#infir2rt.buffer<state, 256, tensor<8x4xf32>>, #infir2rt.buffer<scratch, 128, tensor<8x4xf32>>, #infir2rt.buffer<scratch, 0, tensor<8x4xf32>>]
// CHECK-NEXT: infir2rt.call "copy" [#infir2rt.buffer<scratch, 320, tensor<f32>>, #infir2rt.buffer<state, 384, tensor<f32>>] attributes [] at "result output loss"
// CHECK-NEXT: infir2rt.call "copy" [#infir2rt.buffer<scratch, 0, tensor<8x4xf32>>, #infir2rt.buffer<state, 256, tensor<8x4xf32>>] attributes [] at "result grad embed"
// CHECK-NEXT: return

// SGD: weight decay 0.1, clipping at 1.0; the update is both the new master
// and (the model being FP32) the working copy.
// CHECK-LABEL: func.func @infir2_optimizer_step() {
// CHECK-NEXT: infir2rt.call "global_norm" {{.*}} attributes [0.000000e+00, 0.000000e+00]
// CHECK-NEXT: infir2rt.call "sgd" {{.*}} attributes [1.000000e-01, 1.000000e+00]
// CHECK-NEXT: infir2rt.call "copy" {{.*}} at "result master embed"
// CHECK-NEXT: infir2rt.call "copy" {{.*}} at "result param embed"
// CHECK-NEXT: infir2rt.call "copy" {{.*}} at "result output grad_norm"

// CHECK-LABEL: func.func @infir2_eval_step() {
// CHECK: infir2rt.call "copy" [#infir2rt.buffer<scratch, 0, tensor<f32>>, #infir2rt.buffer<state, 768, tensor<f32>>] attributes [] at "result output eval_loss"

module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 832, scratch_bytes = 768, batch = 2, seq = 3, vocab = 8, zero1_world_size = 0, slots = [#infir2rt.slot<param, "embed", 0, tensor<8x4xf32>, #infir2.param<"embed", normal(std = 5.000000e-01)>>, #infir2rt.slot<input, "input_ids", 128, tensor<2x3xi32>>, #infir2rt.slot<input, "targets", 192, tensor<2x3xi32>>, #infir2rt.slot<grad, "embed", 256, tensor<8x4xf32>>, #infir2rt.slot<output, "loss", 384, tensor<f32>>, #infir2rt.slot<master, "embed", 448, tensor<8x4xf32>>, #infir2rt.slot<input, "learning_rate", 576, tensor<f32>>, #infir2rt.slot<input, "grad_scale", 640, tensor<f32>>, #infir2rt.slot<output, "grad_norm", 704, tensor<f32>>, #infir2rt.slot<output, "eval_loss", 768, tensor<f32>>]>} {
  func.func @forward(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>, infir2rt.buffer = #infir2rt.buffer<state, 0, tensor<8x4xf32>>}, %arg1: tensor<2x3xi32> {infir2rt.buffer = #infir2rt.buffer<state, 128, tensor<2x3xi32>>}, %arg2: tensor<2x3xi32> {infir2rt.buffer = #infir2rt.buffer<state, 192, tensor<2x3xi32>>}) -> tensor<f32> attributes {infir2rt.scratch_bytes = 320 : i64, infir2rt.symbol = "infir2_eval_step"} {
    %0 = infir2.embedding %arg0[%arg1] {infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<2x3x4xf32>>]} : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {infir2rt.buffers = [#infir2rt.buffer<scratch, 128, tensor<2x3x8xf32>>], transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 {infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<f32>>]} : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    return {infir2rt.copy_out = [#infir2rt.buffer<state, 768, tensor<f32>>]} %2 : tensor<f32>
  }
  func.func @train_step(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>, infir2rt.buffer = #infir2rt.buffer<state, 0, tensor<8x4xf32>>}, %arg1: tensor<2x3xi32> {infir2rt.buffer = #infir2rt.buffer<state, 128, tensor<2x3xi32>>}, %arg2: tensor<2x3xi32> {infir2rt.buffer = #infir2rt.buffer<state, 192, tensor<2x3xi32>>}, %arg3: tensor<8x4xf32> {infir2.grad_of = "embed", infir2rt.buffer = #infir2rt.buffer<state, 256, tensor<8x4xf32>>}) -> (tensor<f32>, tensor<8x4xf32> {infir2.grad_of = "embed"}) attributes {infir2rt.scratch_bytes = 768 : i64, infir2rt.symbol = "infir2_train_step"} {
    %0 = infir2.embedding %arg0[%arg1] {infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<2x3x4xf32>>]} : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {infir2rt.buffers = [#infir2rt.buffer<scratch, 128, tensor<2x3x8xf32>>], transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 {infir2rt.buffers = [#infir2rt.buffer<scratch, 320, tensor<f32>>]} : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    %cst = arith.constant {infir2rt.buffers = [#infir2rt.buffer<scratch, 384, tensor<f32>>]} dense<1.000000e+00> : tensor<f32>
    %3 = infir2.cross_entropy_grad %1, %arg2, %cst {infir2rt.buffers = [#infir2rt.buffer<scratch, 448, tensor<2x3x8xf32>>]} : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<f32>
    %4 = infir2.matmul %3, %arg0 {infir2.gemm_grad_operand = 0 : i64, infir2.gemm_role = "dgrad", infir2.gemm_weight = "embed", infir2rt.buffers = [#infir2rt.buffer<scratch, 128, tensor<2x3x4xf32>>]} : tensor<2x3x8xf32>, tensor<8x4xf32> -> tensor<2x3x4xf32>
    %5 = infir2.reshape %0 {infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<6x4xf32>>]} : tensor<2x3x4xf32> -> tensor<6x4xf32>
    %6 = infir2.reshape %3 {infir2rt.buffers = [#infir2rt.buffer<scratch, 448, tensor<6x8xf32>>]} : tensor<2x3x8xf32> -> tensor<6x8xf32>
    %7 = infir2.matmul %6, %5 {infir2.gemm_grad_operand = 0 : i64, infir2.gemm_role = "wgrad", infir2.gemm_weight = "embed", infir2rt.buffers = [#infir2rt.buffer<scratch, 640, tensor<8x4xf32>>], transpose_lhs} : tensor<6x8xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
    %8 = infir2.embedding_grad %arg1, %4 {infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<8x4xf32>>]} : tensor<2x3xi32>, tensor<2x3x4xf32> -> tensor<8x4xf32>
    %9 = infir2.add %7, %8 {infir2rt.buffers = [#infir2rt.buffer<scratch, 128, tensor<8x4xf32>>]} : tensor<8x4xf32>, tensor<8x4xf32>
    %10 = infir2.add %arg3, %9 {infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<8x4xf32>>]} : tensor<8x4xf32>, tensor<8x4xf32>
    return {infir2rt.copy_out = [#infir2rt.buffer<state, 384, tensor<f32>>, #infir2rt.buffer<state, 256, tensor<8x4xf32>>]} %2, %10 : tensor<f32>, tensor<8x4xf32>
  }
  func.func @optimizer_step(%arg0: tensor<8x4xf32> {infir2.master_of = "embed", infir2rt.buffer = #infir2rt.buffer<state, 448, tensor<8x4xf32>>}, %arg1: tensor<8x4xf32> {infir2.grad_of = "embed", infir2rt.buffer = #infir2rt.buffer<state, 256, tensor<8x4xf32>>}, %arg2: tensor<f32> {infir2.input = "learning_rate", infir2rt.buffer = #infir2rt.buffer<state, 576, tensor<f32>>}, %arg3: tensor<f32> {infir2.input = "grad_scale", infir2rt.buffer = #infir2rt.buffer<state, 640, tensor<f32>>}) -> (tensor<8x4xf32> {infir2.master_of = "embed"}, tensor<8x4xf32> {infir2.working_copy_of = "embed"}, tensor<f32>) attributes {infir2rt.scratch_bytes = 192 : i64, infir2rt.symbol = "infir2_optimizer_step"} {
    %0 = infir2.global_norm %arg1 scale %arg3 {infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<f32>>]} : tensor<8x4xf32>
    %1 = infir2.sgd %arg0, %arg1, %arg2, %arg3, %0 {infir2rt.buffers = [#infir2rt.buffer<scratch, 64, tensor<8x4xf32>>], max_grad_norm = 1.000000e+00 : f64, weight_decay = 1.000000e-01 : f64} : tensor<8x4xf32>
    return {infir2rt.copy_out = [#infir2rt.buffer<state, 448, tensor<8x4xf32>>, #infir2rt.buffer<state, 0, tensor<8x4xf32>>, #infir2rt.buffer<state, 704, tensor<f32>>]} %1, %1, %0 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>
  }
}
