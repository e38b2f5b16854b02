// RUN: infir2-opt %s --split-input-file --infir2-plan-memory | FileCheck %s

// When a result may not go straight into its state slot: the module of
// plan-memory.mlir, changed so that an argument in a result's slot is still
// read after the op that makes the result. Such a result is made in the
// arena and copied out at the end.

// The accumulator is read again after the add, by the mul that makes the
// returned value: the add's result stays in the arena. The mul reads each
// element of the accumulator before writing it, so it writes the slot in
// place.
// CHECK-LABEL: func.func @train_step(
// CHECK: infir2.add %arg3, {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<8x4xf32>>]
// CHECK: infir2.mul {{.*}}infir2rt.buffers = [#infir2rt.buffer<state, 256, tensor<8x4xf32>>]
// CHECK: return {infir2rt.copy_out = [#infir2rt.buffer<state, 384, tensor<f32>>, #infir2rt.buffer<state, 256, tensor<8x4xf32>>]}

// The master is read after the update, by the add that makes the working
// copy: the update stays in the arena; the working copy's slot is read by
// no argument, so the add writes it in place.
// CHECK-LABEL: func.func @optimizer_step(
// CHECK: infir2.sgd {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<8x4xf32>>]
// CHECK: infir2.add {{.*}}infir2rt.buffers = [#infir2rt.buffer<state, 0, tensor<8x4xf32>>]

module {
  func.func @forward(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>) -> tensor<f32> {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    return %2 : tensor<f32>
  }
  func.func @train_step(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>, %arg3: tensor<8x4xf32> {infir2.grad_of = "embed"}) -> (tensor<f32>, tensor<8x4xf32> {infir2.grad_of = "embed"}) {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %3 = infir2.cross_entropy_grad %1, %arg2, %cst : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<f32>
    %4 = infir2.matmul %3, %arg0 {infir2.gemm_grad_operand = 0 : i64, infir2.gemm_role = "dgrad", infir2.gemm_weight = "embed"} : tensor<2x3x8xf32>, tensor<8x4xf32> -> tensor<2x3x4xf32>
    %5 = infir2.reshape %0 : tensor<2x3x4xf32> -> tensor<6x4xf32>
    %6 = infir2.reshape %3 : tensor<2x3x8xf32> -> tensor<6x8xf32>
    %7 = infir2.matmul %6, %5 {infir2.gemm_grad_operand = 0 : i64, infir2.gemm_role = "wgrad", infir2.gemm_weight = "embed", transpose_lhs} : tensor<6x8xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
    %8 = infir2.embedding_grad %arg1, %4 : tensor<2x3xi32>, tensor<2x3x4xf32> -> tensor<8x4xf32>
    %9 = infir2.add %7, %8 : tensor<8x4xf32>, tensor<8x4xf32>
    %10 = infir2.add %arg3, %9 : tensor<8x4xf32>, tensor<8x4xf32>
    %11 = infir2.mul %10, %arg3 : tensor<8x4xf32>, tensor<8x4xf32>
    return %2, %11 : tensor<f32>, tensor<8x4xf32>
  }
  func.func @optimizer_step(%arg0: tensor<8x4xf32> {infir2.master_of = "embed"}, %arg1: tensor<8x4xf32> {infir2.grad_of = "embed"}, %arg2: tensor<f32> {infir2.input = "learning_rate"}, %arg3: tensor<f32> {infir2.input = "grad_scale"}) -> (tensor<8x4xf32> {infir2.master_of = "embed"}, tensor<8x4xf32> {infir2.working_copy_of = "embed"}, tensor<f32>) {
    %0 = infir2.global_norm %arg1 scale %arg3 : tensor<8x4xf32>
    %1 = infir2.sgd %arg0, %arg1, %arg2, %arg3, %0 {max_grad_norm = 1.000000e+00 : f64, weight_decay = 1.000000e-01 : f64} : tensor<8x4xf32>
    %2 = infir2.add %1, %arg0 : tensor<8x4xf32>, tensor<8x4xf32>
    return %1, %2, %0 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>
  }
}

// -----

// The master argument itself is returned too (as the working copy), after
// the update that would take its slot: it is read at the end, so the update
// stays in the arena and the old master is copied out unchanged.
// CHECK-LABEL: func.func @optimizer_step(
// CHECK: infir2.sgd {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<8x4xf32>>]
// CHECK: return {infir2rt.copy_out = [#infir2rt.buffer<state, 448, tensor<8x4xf32>>, #infir2rt.buffer<state, 0, tensor<8x4xf32>>, #infir2rt.buffer<state, 704, tensor<f32>>]}

module {
  func.func @forward(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>) -> tensor<f32> {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    return %2 : tensor<f32>
  }
  func.func @train_step(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>, %arg3: tensor<8x4xf32> {infir2.grad_of = "embed"}) -> (tensor<f32>, tensor<8x4xf32> {infir2.grad_of = "embed"}) {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %3 = infir2.cross_entropy_grad %1, %arg2, %cst : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<f32>
    %4 = infir2.matmul %3, %arg0 {infir2.gemm_grad_operand = 0 : i64, infir2.gemm_role = "dgrad", infir2.gemm_weight = "embed"} : tensor<2x3x8xf32>, tensor<8x4xf32> -> tensor<2x3x4xf32>
    %5 = infir2.reshape %0 : tensor<2x3x4xf32> -> tensor<6x4xf32>
    %6 = infir2.reshape %3 : tensor<2x3x8xf32> -> tensor<6x8xf32>
    %7 = infir2.matmul %6, %5 {infir2.gemm_grad_operand = 0 : i64, infir2.gemm_role = "wgrad", infir2.gemm_weight = "embed", transpose_lhs} : tensor<6x8xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
    %8 = infir2.embedding_grad %arg1, %4 : tensor<2x3xi32>, tensor<2x3x4xf32> -> tensor<8x4xf32>
    %9 = infir2.add %7, %8 : tensor<8x4xf32>, tensor<8x4xf32>
    %10 = infir2.add %arg3, %9 : tensor<8x4xf32>, tensor<8x4xf32>
    %11 = infir2.mul %10, %arg3 : tensor<8x4xf32>, tensor<8x4xf32>
    return %2, %11 : tensor<f32>, tensor<8x4xf32>
  }
  func.func @optimizer_step(%arg0: tensor<8x4xf32> {infir2.master_of = "embed"}, %arg1: tensor<8x4xf32> {infir2.grad_of = "embed"}, %arg2: tensor<f32> {infir2.input = "learning_rate"}, %arg3: tensor<f32> {infir2.input = "grad_scale"}) -> (tensor<8x4xf32> {infir2.master_of = "embed"}, tensor<8x4xf32> {infir2.working_copy_of = "embed"}, tensor<f32>) {
    %0 = infir2.global_norm %arg1 scale %arg3 : tensor<8x4xf32>
    %1 = infir2.sgd %arg0, %arg1, %arg2, %arg3, %0 {max_grad_norm = 1.000000e+00 : f64, weight_decay = 1.000000e-01 : f64} : tensor<8x4xf32>
    return %1, %arg0, %0 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>
  }
}

// -----

// A weight gradient that its GEMM adds to the accumulator: the GEMM reads
// each accumulator element before writing it, so it writes the gradient's
// slot in place (no arena, no copy).
// CHECK-LABEL: func.func @train_step(
// CHECK: infir2.matmul {{.*}} acc(%arg3 : tensor<8x4xf32>) {{.*}}infir2rt.buffers = [#infir2rt.buffer<state, 256, tensor<8x4xf32>>]
// CHECK: return {infir2rt.copy_out = [#infir2rt.buffer<state, 384, tensor<f32>>, #infir2rt.buffer<state, 256, tensor<8x4xf32>>]}

module {
  func.func @forward(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>) -> tensor<f32> {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    return %2 : tensor<f32>
  }
  func.func @train_step(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>, %arg3: tensor<8x4xf32> {infir2.grad_of = "embed"}) -> (tensor<f32>, tensor<8x4xf32> {infir2.grad_of = "embed"}) {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %3 = infir2.cross_entropy_grad %1, %arg2, %cst : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<f32>
    %5 = infir2.reshape %0 : tensor<2x3x4xf32> -> tensor<6x4xf32>
    %6 = infir2.reshape %3 : tensor<2x3x8xf32> -> tensor<6x8xf32>
    %7 = infir2.matmul %6, %5 acc(%arg3 : tensor<8x4xf32>) {transpose_lhs} : tensor<6x8xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
    return %2, %7 : tensor<f32>, tensor<8x4xf32>
  }
  func.func @optimizer_step(%arg0: tensor<8x4xf32> {infir2.master_of = "embed"}, %arg1: tensor<8x4xf32> {infir2.grad_of = "embed"}, %arg2: tensor<f32> {infir2.input = "learning_rate"}, %arg3: tensor<f32> {infir2.input = "grad_scale"}) -> (tensor<8x4xf32> {infir2.master_of = "embed"}, tensor<8x4xf32> {infir2.working_copy_of = "embed"}, tensor<f32>) {
    %0 = infir2.global_norm %arg1 scale %arg3 : tensor<8x4xf32>
    %1 = infir2.sgd %arg0, %arg1, %arg2, %arg3, %0 {max_grad_norm = 1.000000e+00 : f64, weight_decay = 1.000000e-01 : f64} : tensor<8x4xf32>
    return %1, %1, %0 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>
  }
}

// -----

// The same, with the accumulator read again after the GEMM: the GEMM
// writes the arena, and its result is copied out.
// CHECK-LABEL: func.func @train_step(
// CHECK: infir2.matmul {{.*}} acc(%arg3 : tensor<8x4xf32>) {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch,
// CHECK: return {infir2rt.copy_out = [#infir2rt.buffer<state, 384, tensor<f32>>, #infir2rt.buffer<state, 256, tensor<8x4xf32>>]}

module {
  func.func @forward(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>) -> tensor<f32> {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    return %2 : tensor<f32>
  }
  func.func @train_step(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>, %arg3: tensor<8x4xf32> {infir2.grad_of = "embed"}) -> (tensor<f32>, tensor<8x4xf32> {infir2.grad_of = "embed"}) {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %3 = infir2.cross_entropy_grad %1, %arg2, %cst : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<f32>
    %5 = infir2.reshape %0 : tensor<2x3x4xf32> -> tensor<6x4xf32>
    %6 = infir2.reshape %3 : tensor<2x3x8xf32> -> tensor<6x8xf32>
    %7 = infir2.matmul %6, %5 acc(%arg3 : tensor<8x4xf32>) {transpose_lhs} : tensor<6x8xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
    %8 = infir2.mul %7, %arg3 : tensor<8x4xf32>, tensor<8x4xf32>
    return %2, %8 : tensor<f32>, tensor<8x4xf32>
  }
  func.func @optimizer_step(%arg0: tensor<8x4xf32> {infir2.master_of = "embed"}, %arg1: tensor<8x4xf32> {infir2.grad_of = "embed"}, %arg2: tensor<f32> {infir2.input = "learning_rate"}, %arg3: tensor<f32> {infir2.input = "grad_scale"}) -> (tensor<8x4xf32> {infir2.master_of = "embed"}, tensor<8x4xf32> {infir2.working_copy_of = "embed"}, tensor<f32>) {
    %0 = infir2.global_norm %arg1 scale %arg3 : tensor<8x4xf32>
    %1 = infir2.sgd %arg0, %arg1, %arg2, %arg3, %0 {max_grad_norm = 1.000000e+00 : f64, weight_decay = 1.000000e-01 : f64} : tensor<8x4xf32>
    return %1, %1, %0 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>
  }
}

// -----

// The all-reduce sums a gradient accumulator in place when nothing else
// reads it: its result is the accumulator's own slot (state 256), which the
// update then reads.
// CHECK-LABEL: infir2.all_reduce %arg1 {infir2rt.buffers = [#infir2rt.buffer<state, 256, tensor<8x4xf32>>]}
// CHECK: infir2.sgd %arg0, %0,

module {
  func.func @forward(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>) -> tensor<f32> {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    return %2 : tensor<f32>
  }
  func.func @train_step(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>, %arg3: tensor<8x4xf32> {infir2.grad_of = "embed"}) -> (tensor<f32>, tensor<8x4xf32> {infir2.grad_of = "embed"}) {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %3 = infir2.cross_entropy_grad %1, %arg2, %cst : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<f32>
    %4 = infir2.matmul %3, %arg0 {infir2.gemm_grad_operand = 0 : i64, infir2.gemm_role = "dgrad", infir2.gemm_weight = "embed"} : tensor<2x3x8xf32>, tensor<8x4xf32> -> tensor<2x3x4xf32>
    %5 = infir2.reshape %0 : tensor<2x3x4xf32> -> tensor<6x4xf32>
    %6 = infir2.reshape %3 : tensor<2x3x8xf32> -> tensor<6x8xf32>
    %7 = infir2.matmul %6, %5 {infir2.gemm_grad_operand = 0 : i64, infir2.gemm_role = "wgrad", infir2.gemm_weight = "embed", transpose_lhs} : tensor<6x8xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
    %8 = infir2.embedding_grad %arg1, %4 : tensor<2x3xi32>, tensor<2x3x4xf32> -> tensor<8x4xf32>
    %9 = infir2.add %7, %8 : tensor<8x4xf32>, tensor<8x4xf32>
    %10 = infir2.add %arg3, %9 : tensor<8x4xf32>, tensor<8x4xf32>
    %11 = infir2.mul %10, %arg3 : tensor<8x4xf32>, tensor<8x4xf32>
    return %2, %11 : tensor<f32>, tensor<8x4xf32>
  }
  func.func @optimizer_step(%arg0: tensor<8x4xf32> {infir2.master_of = "embed"}, %arg1: tensor<8x4xf32> {infir2.grad_of = "embed"}, %arg2: tensor<f32> {infir2.input = "learning_rate"}, %arg3: tensor<f32> {infir2.input = "grad_scale"}) -> (tensor<8x4xf32> {infir2.master_of = "embed"}, tensor<8x4xf32> {infir2.working_copy_of = "embed"}, tensor<f32>) {
    %g = infir2.all_reduce %arg1 : tensor<8x4xf32>
    %0 = infir2.global_norm %g scale %arg3 : tensor<8x4xf32>
    %1 = infir2.sgd %arg0, %g, %arg2, %arg3, %0 {max_grad_norm = 1.000000e+00 : f64, weight_decay = 1.000000e-01 : f64} : tensor<8x4xf32>
    return %1, %1, %0 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>
  }
}

// -----

// An accumulator that is read again after the all-reduce keeps its value:
// the sum goes to the arena.
// CHECK-LABEL: infir2.all_reduce %arg1 {infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<8x4xf32>>]}

module {
  func.func @forward(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>) -> tensor<f32> {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    return %2 : tensor<f32>
  }
  func.func @train_step(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>, %arg3: tensor<8x4xf32> {infir2.grad_of = "embed"}) -> (tensor<f32>, tensor<8x4xf32> {infir2.grad_of = "embed"}) {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %3 = infir2.cross_entropy_grad %1, %arg2, %cst : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<f32>
    %4 = infir2.matmul %3, %arg0 {infir2.gemm_grad_operand = 0 : i64, infir2.gemm_role = "dgrad", infir2.gemm_weight = "embed"} : tensor<2x3x8xf32>, tensor<8x4xf32> -> tensor<2x3x4xf32>
    %5 = infir2.reshape %0 : tensor<2x3x4xf32> -> tensor<6x4xf32>
    %6 = infir2.reshape %3 : tensor<2x3x8xf32> -> tensor<6x8xf32>
    %7 = infir2.matmul %6, %5 {infir2.gemm_grad_operand = 0 : i64, infir2.gemm_role = "wgrad", infir2.gemm_weight = "embed", transpose_lhs} : tensor<6x8xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
    %8 = infir2.embedding_grad %arg1, %4 : tensor<2x3xi32>, tensor<2x3x4xf32> -> tensor<8x4xf32>
    %9 = infir2.add %7, %8 : tensor<8x4xf32>, tensor<8x4xf32>
    %10 = infir2.add %arg3, %9 : tensor<8x4xf32>, tensor<8x4xf32>
    %11 = infir2.mul %10, %arg3 : tensor<8x4xf32>, tensor<8x4xf32>
    return %2, %11 : tensor<f32>, tensor<8x4xf32>
  }
  func.func @optimizer_step(%arg0: tensor<8x4xf32> {infir2.master_of = "embed"}, %arg1: tensor<8x4xf32> {infir2.grad_of = "embed"}, %arg2: tensor<f32> {infir2.input = "learning_rate"}, %arg3: tensor<f32> {infir2.input = "grad_scale"}) -> (tensor<8x4xf32> {infir2.master_of = "embed"}, tensor<8x4xf32> {infir2.working_copy_of = "embed"}, tensor<f32>) {
    %g = infir2.all_reduce %arg1 : tensor<8x4xf32>
    %0 = infir2.global_norm %g scale %arg3 : tensor<8x4xf32>
    %1 = infir2.sgd %arg0, %g, %arg2, %arg3, %0 {max_grad_norm = 1.000000e+00 : f64, weight_decay = 1.000000e-01 : f64} : tensor<8x4xf32>
    %2 = infir2.add %1, %arg1 : tensor<8x4xf32>, tensor<8x4xf32>
    return %1, %2, %0 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>
  }
}

// -----

// A tied embedding's gradient: the GEMM adds into the accumulator, the
// embedding's gradient into that, and the sum goes back to the
// accumulator's slot. Both links write the slot where it lies (the
// accumulator and the first sum are read by the next link alone), and
// nothing is copied out.
// CHECK-LABEL: func.func @train_step(
// CHECK: infir2.matmul {{.*}}acc(%arg3 {{.*}}infir2rt.buffers = [#infir2rt.buffer<state, 256, tensor<8x4xf32>>]
// CHECK: infir2.embedding_grad {{.*}}infir2rt.buffers = [#infir2rt.buffer<state, 256, tensor<8x4xf32>>]
// CHECK: return {infir2rt.copy_out = [#infir2rt.buffer<state, 384, tensor<f32>>, #infir2rt.buffer<state, 256, tensor<8x4xf32>>]}

module {
  func.func @forward(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>) -> tensor<f32> {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    return %2 : tensor<f32>
  }
  func.func @train_step(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>, %arg3: tensor<8x4xf32> {infir2.grad_of = "embed"}) -> (tensor<f32>, tensor<8x4xf32> {infir2.grad_of = "embed"}) {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %3 = infir2.cross_entropy_grad %1, %arg2, %cst : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<f32>
    %4 = infir2.matmul %3, %arg0 : tensor<2x3x8xf32>, tensor<8x4xf32> -> tensor<2x3x4xf32>
    %5 = infir2.reshape %0 : tensor<2x3x4xf32> -> tensor<6x4xf32>
    %6 = infir2.reshape %3 : tensor<2x3x8xf32> -> tensor<6x8xf32>
    %7 = infir2.matmul %6, %5 acc(%arg3 : tensor<8x4xf32>) {transpose_lhs} : tensor<6x8xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
    %8 = infir2.embedding_grad %arg1, %4 acc(%7 : tensor<8x4xf32>) : tensor<2x3xi32>, tensor<2x3x4xf32> -> tensor<8x4xf32>
    return %2, %8 : tensor<f32>, tensor<8x4xf32>
  }
  func.func @optimizer_step(%arg0: tensor<8x4xf32> {infir2.master_of = "embed"}, %arg1: tensor<8x4xf32> {infir2.grad_of = "embed"}, %arg2: tensor<f32> {infir2.input = "learning_rate"}, %arg3: tensor<f32> {infir2.input = "grad_scale"}) -> (tensor<8x4xf32> {infir2.master_of = "embed"}, tensor<8x4xf32> {infir2.working_copy_of = "embed"}, tensor<f32>) {
    %0 = infir2.global_norm %arg1 scale %arg3 : tensor<8x4xf32>
    %1 = infir2.sgd %arg0, %arg1, %arg2, %arg3, %0 {max_grad_norm = 1.000000e+00 : f64, weight_decay = 1.000000e-01 : f64} : tensor<8x4xf32>
    %2 = infir2.add %1, %arg0 : tensor<8x4xf32>, tensor<8x4xf32>
    return %1, %2, %0 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>
  }
}

// -----

// The same chain with the first sum read again after the second link: the
// second link may not write the first's buffer, so the chain is not laid in
// the slot as one; the GEMM still adds in the arena.
// CHECK-LABEL: func.func @train_step(
// CHECK: infir2.matmul {{.*}}acc(%arg3 {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch,
// CHECK: infir2.embedding_grad {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch,

module {
  func.func @forward(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>) -> tensor<f32> {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    return %2 : tensor<f32>
  }
  func.func @train_step(%arg0: tensor<8x4xf32> {infir2.param = #infir2.param<"embed", normal(std = 5.000000e-01)>}, %arg1: tensor<2x3xi32>, %arg2: tensor<2x3xi32>, %arg3: tensor<8x4xf32> {infir2.grad_of = "embed"}) -> (tensor<f32>, tensor<8x4xf32> {infir2.grad_of = "embed"}) {
    %0 = infir2.embedding %arg0[%arg1] : tensor<8x4xf32>[tensor<2x3xi32>] -> tensor<2x3x4xf32>
    %1 = infir2.matmul %0, %arg0 {transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %2 = infir2.cross_entropy %1, %arg2 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %3 = infir2.cross_entropy_grad %1, %arg2, %cst : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<f32>
    %4 = infir2.matmul %3, %arg0 : tensor<2x3x8xf32>, tensor<8x4xf32> -> tensor<2x3x4xf32>
    %5 = infir2.reshape %0 : tensor<2x3x4xf32> -> tensor<6x4xf32>
    %6 = infir2.reshape %3 : tensor<2x3x8xf32> -> tensor<6x8xf32>
    %7 = infir2.matmul %6, %5 acc(%arg3 : tensor<8x4xf32>) {transpose_lhs} : tensor<6x8xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
    %8 = infir2.embedding_grad %arg1, %4 acc(%7 : tensor<8x4xf32>) : tensor<2x3xi32>, tensor<2x3x4xf32> -> tensor<8x4xf32>
    %9 = infir2.mul %8, %7 : tensor<8x4xf32>, tensor<8x4xf32>
    return %2, %9 : tensor<f32>, tensor<8x4xf32>
  }
  func.func @optimizer_step(%arg0: tensor<8x4xf32> {infir2.master_of = "embed"}, %arg1: tensor<8x4xf32> {infir2.grad_of = "embed"}, %arg2: tensor<f32> {infir2.input = "learning_rate"}, %arg3: tensor<f32> {infir2.input = "grad_scale"}) -> (tensor<8x4xf32> {infir2.master_of = "embed"}, tensor<8x4xf32> {infir2.working_copy_of = "embed"}, tensor<f32>) {
    %0 = infir2.global_norm %arg1 scale %arg3 : tensor<8x4xf32>
    %1 = infir2.sgd %arg0, %arg1, %arg2, %arg3, %0 {max_grad_norm = 1.000000e+00 : f64, weight_decay = 1.000000e-01 : f64} : tensor<8x4xf32>
    %2 = infir2.add %1, %arg0 : tensor<8x4xf32>, tensor<8x4xf32>
    return %1, %2, %0 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>
  }
}

