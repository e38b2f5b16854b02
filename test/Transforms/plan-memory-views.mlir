// RUN: infir2-opt %s --split-input-file --infir2-plan-memory --verify-diagnostics | FileCheck %s

// Views at an offset: a loss in two chunks of 3 tokens (what
// --infir2-chunk-loss makes). A slice lies in its input's buffer at its
// first row (the hidden rows in the arena, the targets in their state
// slot: 3 x 4 x 4 = 48 and 3 x 4 = 12 bytes on); the concat's buffer is
// placed when its first input is made, and each input lies in it at its
// rows (no copy). Hand-checked: the embedding's [0, 96) holds both hidden
// slices; chunk 0's logits [256, 352) are free once their gradient is
// made, so the concat reuses those bytes; chunk 1's input gradient lies at
// 256 + 48.
// CHECK-LABEL: func.func @train_step(
// CHECK: infir2.embedding {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<2x3x4xf32>>]
// CHECK: infir2.reshape %arg2 {infir2rt.buffers = [#infir2rt.buffer<state, 192, tensor<6xi32>>]}
// CHECK: infir2.slice {{.*}}[0] {infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<3x4xf32>>]}
// CHECK: infir2.slice {{.*}}[0] {infir2rt.buffers = [#infir2rt.buffer<state, 192, tensor<3xi32>>]}
// CHECK: infir2.matmul {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch, 256, tensor<3x8xf32>>]
// CHECK: %[[X0:.+]] = infir2.matmul {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch, 256, tensor<3x4xf32>>]
// CHECK: infir2.slice {{.*}}[3] {infir2rt.buffers = [#infir2rt.buffer<scratch, 48, tensor<3x4xf32>>]}
// CHECK: infir2.slice {{.*}}[3] {infir2rt.buffers = [#infir2rt.buffer<state, 204, tensor<3xi32>>]}
// CHECK: %[[X1:.+]] = infir2.matmul {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch, 304, tensor<3x4xf32>>]
// CHECK: infir2.concat %[[X0]], %[[X1]] {infir2rt.buffers = [#infir2rt.buffer<scratch, 256, tensor<6x4xf32>>]}

module {
  func.func @train_step(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>, %arg3: tensor<8x4xf32> {infir2.grad_of = "embed"}) -> (tensor<f32>, tensor<8x4xf32> {infir2.grad_of = "embed"}) {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %r = infir2.reshape %0 : tensor<2x3x4xf32> -> tensor<6x4xf32>
    %t = infir2.reshape %arg2 : tensor<2x3xi32> -> tensor<6xi32>
    %w = infir2.loss_weight %t : tensor<6xi32> -> tensor<f32>
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %h0 = infir2.slice %r[0] : tensor<6x4xf32> -> tensor<3x4xf32>
    %t0 = infir2.slice %t[0] : tensor<6xi32> -> tensor<3xi32>
    %l0 = infir2.matmul %h0, %arg0 {transpose_rhs} : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x8xf32>
    %p0 = infir2.cross_entropy %l0, %t0 divisor %w : tensor<3x8xf32>, tensor<3xi32> -> tensor<f32>
    %d0 = infir2.cross_entropy_grad %l0, %t0, %cst divisor %w : tensor<3x8xf32>, tensor<3xi32>, tensor<f32>
    %x0 = infir2.matmul %d0, %arg0 : tensor<3x8xf32>, tensor<8x4xf32> -> tensor<3x4xf32>
    %h1 = infir2.slice %r[3] : tensor<6x4xf32> -> tensor<3x4xf32>
    %t1 = infir2.slice %t[3] : tensor<6xi32> -> tensor<3xi32>
    %l1 = infir2.matmul %h1, %arg0 {transpose_rhs} : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x8xf32>
    %p1 = infir2.cross_entropy %l1, %t1 divisor %w : tensor<3x8xf32>, tensor<3xi32> -> tensor<f32>
    %loss = infir2.add %p0, %p1 : tensor<f32>, tensor<f32>
    %d1 = infir2.cross_entropy_grad %l1, %t1, %cst divisor %w : tensor<3x8xf32>, tensor<3xi32>, tensor<f32>
    %x1 = infir2.matmul %d1, %arg0 : tensor<3x8xf32>, tensor<8x4xf32> -> tensor<3x4xf32>
    %x = infir2.concat %x0, %x1 : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<6x4xf32>
    %xr = infir2.reshape %x : tensor<6x4xf32> -> tensor<2x3x4xf32>
    %g = infir2.embedding_grad %arg1, %xr acc(%arg3 : tensor<8x4xf32>) : tensor<2x3xi32>, tensor<2x3x4xf32> -> tensor<8x4xf32>
    return %loss, %g : tensor<f32>, tensor<8x4xf32>
  }
  func.func @optimizer_step(%arg0: tensor<8x4xf32> {infir2.master_of = "embed"}, %arg1: tensor<8x4xf32> {infir2.grad_of = "embed"}, %arg2: tensor<f32> {infir2.input = "learning_rate"}, %arg3: tensor<f32> {infir2.input = "grad_scale"}) -> (tensor<8x4xf32> {infir2.master_of = "embed"}, tensor<f32>) {
    %0 = infir2.global_norm %arg1 scale %arg3 : tensor<8x4xf32>
    %1 = infir2.sgd %arg0, %arg1, %arg2, %arg3, %0 {max_grad_norm = 1.000000e+00 : f64, weight_decay = 1.000000e-01 : f64} : tensor<8x4xf32>
    return %1, %0 : tensor<8x4xf32>, tensor<f32>
  }
}

// -----

// A returned slice does not put its whole base into the result's smaller
// slot: the embedding's 192 bytes stay in the arena (written in place they
// would run past the 128-byte gradient slot at 256 into the loss's at
// 384), and the slice's rows are copied out.
// CHECK-LABEL: func.func @train_step(
// CHECK: infir2.embedding {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<2x6x4xf32>>]
// CHECK: infir2.slice {{.*}}[4] {infir2rt.buffers = [#infir2rt.buffer<scratch, 64, tensor<8x4xf32>>]}
// CHECK: return {infir2rt.copy_out = [#infir2rt.buffer<state, 384, tensor<f32>>, #infir2rt.buffer<state, 256, tensor<8x4xf32>>]}
module {
  func.func @train_step(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x6xi32>, %arg2: tensor<2x6xi32>, %arg3: tensor<8x4xf32> {infir2.grad_of = "embed"}) -> (tensor<f32>, tensor<8x4xf32> {infir2.grad_of = "embed"}) {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x6xi32>] -> tensor<2x6x4xf32>
    %r = infir2.reshape %0 : tensor<2x6x4xf32> -> tensor<12x4xf32>
    %l = infir2.matmul %r, %arg0 {transpose_rhs} : tensor<12x4xf32>, tensor<8x4xf32> -> tensor<12x8xf32>
    %t = infir2.reshape %arg2 : tensor<2x6xi32> -> tensor<12xi32>
    %p = infir2.cross_entropy %l, %t : tensor<12x8xf32>, tensor<12xi32> -> tensor<f32>
    %g = infir2.slice %r[4] : tensor<12x4xf32> -> tensor<8x4xf32>
    return %p, %g : tensor<f32>, tensor<8x4xf32>
  }
  func.func @optimizer_step(%arg0: tensor<8x4xf32> {infir2.master_of = "embed"}, %arg1: tensor<8x4xf32> {infir2.grad_of = "embed"}, %arg2: tensor<f32> {infir2.input = "learning_rate"}, %arg3: tensor<f32> {infir2.input = "grad_scale"}) -> (tensor<8x4xf32> {infir2.master_of = "embed"}, tensor<f32>) {
    %0 = infir2.global_norm %arg1 scale %arg3 : tensor<8x4xf32>
    %1 = infir2.sgd %arg0, %arg1, %arg2, %arg3, %0 {max_grad_norm = 1.000000e+00 : f64, weight_decay = 1.000000e-01 : f64} : tensor<8x4xf32>
    return %1, %0 : tensor<8x4xf32>, tensor<f32>
  }
}

// -----

// A returned concat is not made in its slot: its first input would be
// written there (at 256, the accumulator's slot) before the accumulator is
// read by the add that follows; it stays in the arena and is copied out.
// CHECK-LABEL: func.func @train_step(
// CHECK: infir2.concat {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch, {{[0-9]+}}, tensor<8x4xf32>>]
// CHECK: return {infir2rt.copy_out = [#infir2rt.buffer<state, 384, tensor<f32>>, #infir2rt.buffer<state, 256, tensor<8x4xf32>>]}
module {
  func.func @train_step(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x2xi32>, %arg2: tensor<2x2xi32>, %arg3: tensor<8x4xf32> {infir2.grad_of = "embed"}) -> (tensor<f32>, tensor<8x4xf32> {infir2.grad_of = "embed"}) {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x2xi32>] -> tensor<2x2x4xf32>
    %r = infir2.reshape %0 : tensor<2x2x4xf32> -> tensor<4x4xf32>
    %l = infir2.matmul %r, %arg0 {transpose_rhs} : tensor<4x4xf32>, tensor<8x4xf32> -> tensor<4x8xf32>
    %t = infir2.reshape %arg2 : tensor<2x2xi32> -> tensor<4xi32>
    %p = infir2.cross_entropy %l, %t : tensor<4x8xf32>, tensor<4xi32> -> tensor<f32>
    %x0 = infir2.add %r, %r : tensor<4x4xf32>, tensor<4x4xf32>
    %u = infir2.add %arg3, %arg3 : tensor<8x4xf32>, tensor<8x4xf32>
    %u0 = infir2.slice %u[4] : tensor<8x4xf32> -> tensor<4x4xf32>
    %x1 = infir2.add %u0, %r : tensor<4x4xf32>, tensor<4x4xf32>
    %x = infir2.concat %x0, %x1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
    return %p, %x : tensor<f32>, tensor<8x4xf32>
  }
  func.func @optimizer_step(%arg0: tensor<8x4xf32> {infir2.master_of = "embed"}, %arg1: tensor<8x4xf32> {infir2.grad_of = "embed"}, %arg2: tensor<f32> {infir2.input = "learning_rate"}, %arg3: tensor<f32> {infir2.input = "grad_scale"}) -> (tensor<8x4xf32> {infir2.master_of = "embed"}, tensor<f32>) {
    %0 = infir2.global_norm %arg1 scale %arg3 : tensor<8x4xf32>
    %1 = infir2.sgd %arg0, %arg1, %arg2, %arg3, %0 {max_grad_norm = 1.000000e+00 : f64, weight_decay = 1.000000e-01 : f64} : tensor<8x4xf32>
    return %1, %0 : tensor<8x4xf32>, tensor<f32>
  }
}

// -----

// A concat of a function argument: the argument cannot lie in the result.
func.func @train_step(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>) -> tensor<f32> {
  %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
  %r = infir2.reshape %0 : tensor<2x3x4xf32> -> tensor<6x4xf32>
  // expected-error @+1 {{'infir2.concat' op has an input it cannot hold in place (a function argument, a view of another tensor, or a value read elsewhere or twice): the runtime has no concatenation to copy it}}
  %x = infir2.concat %arg0, %r : tensor<8x4xf32>, tensor<6x4xf32> -> tensor<14x4xf32>
  %l = infir2.matmul %x, %arg0 {transpose_rhs} : tensor<14x4xf32>, tensor<8x4xf32> -> tensor<14x8xf32>
  %t = infir2.reshape %arg2 : tensor<2x3xi32> -> tensor<6xi32>
  %s = infir2.slice %l[0] : tensor<14x8xf32> -> tensor<6x8xf32>
  %p = infir2.cross_entropy %s, %t : tensor<6x8xf32>, tensor<6xi32> -> tensor<f32>
  return %p : tensor<f32>
}
func.func @optimizer_step() {
  return
}
