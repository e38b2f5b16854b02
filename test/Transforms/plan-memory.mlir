// RUN: infir2-opt %s --infir2-plan-memory | FileCheck %s
// RUN: infir2-opt %s --infir2-plan-memory="report" -o /dev/null | FileCheck %s --check-prefix=REPORT

// Tests the plan of the smallest trainable model: an 8x4 FP32 embedding tied
// to the LM head, micro-batch 2 x 3 tokens, SGD (this module is
// `--bf16-recipe="optimizer=sgd"` of it). Every offset below was worked out
// by hand: state slots in order of first use, each aligned to 64 bytes; the
// arena first fit in execution order, a buffer freed after its last reader
// (a reshape reads through to its input). A result goes straight into its
// state slot when no argument in that slot is read after the op that makes
// it (or by that op, unless it reads each element before writing it): the
// loss, the accumulator's add, the SGD update of the master.

// The state region: the parameter (128 bytes), token ids and targets (24
// each), the gradient accumulator, the loss, the master weight, the
// optimizer's scalar inputs, and the two other scalar outputs.
// CHECK: module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 832, scratch_bytes = 576, batch = 2, seq = 3, vocab = 8, zero1_world_size = 0, slots = [
// CHECK-SAME: #infir2rt.slot<param, "embed", 0, tensor<8x4xf32>, #infir2.param<"embed", normal(std = 5.000000e-01)>>,
// CHECK-SAME: #infir2rt.slot<input, "input_ids", 128, tensor<2x3xi32>>,
// CHECK-SAME: #infir2rt.slot<input, "targets", 192, tensor<2x3xi32>>,
// CHECK-SAME: #infir2rt.slot<grad, "embed", 256, tensor<8x4xf32>>,
// CHECK-SAME: #infir2rt.slot<output, "loss", 384, tensor<f32>>,
// CHECK-SAME: #infir2rt.slot<master, "embed", 448, tensor<8x4xf32>>,
// CHECK-SAME: #infir2rt.slot<input, "learning_rate", 576, tensor<f32>>,
// CHECK-SAME: #infir2rt.slot<input, "grad_scale", 640, tensor<f32>>,
// CHECK-SAME: #infir2rt.slot<output, "grad_norm", 704, tensor<f32>>,
// CHECK-SAME: #infir2rt.slot<output, "eval_loss", 768, tensor<f32>>]>}

// The forward pass is the evaluation step; it shares the state's slots.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: infir2rt.buffer = #infir2rt.buffer<state, 0, tensor<8x4xf32>>
// CHECK-SAME: infir2rt.buffer = #infir2rt.buffer<state, 128, tensor<2x3xi32>>
// CHECK-SAME: attributes {infir2rt.scratch_bytes = 320 : i64, infir2rt.symbol = "infir2_eval_step"}
// CHECK: return {infir2rt.copy_out = [#infir2rt.buffer<state, 768, tensor<f32>>]}

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[ACC:[a-z0-9]+]]: tensor<8x4xf32> {infir2.grad_of = "embed", infir2rt.buffer = #infir2rt.buffer<state, 256, tensor<8x4xf32>>}
// CHECK-SAME: infir2rt.scratch_bytes = 576 : i64, infir2rt.symbol = "infir2_train_step"
// CHECK: %[[H:[0-9]+]] = infir2.embedding {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<2x3x4xf32>>]
// CHECK: %[[LOGITS:[0-9]+]] = infir2.matmul %[[H]], {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch, 128, tensor<2x3x8xf32>>]
// CHECK: %[[LOSS:[0-9]+]] = infir2.cross_entropy {{.*}}infir2rt.buffers = [#infir2rt.buffer<state, 384, tensor<f32>>]
// CHECK: arith.constant {infir2rt.buffers = [#infir2rt.buffer<scratch, 320, tensor<f32>>]}
// CHECK: %[[DLOGITS:[0-9]+]] = infir2.cross_entropy_grad {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch, 384, tensor<2x3x8xf32>>]
// The logits and the constant are dead: the data gradient reuses the
// logits' bytes.
// CHECK: infir2.matmul %[[DLOGITS]], {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch, 128, tensor<2x3x4xf32>>]
// A reshape is a view: it has its input's buffer.
// CHECK: infir2.reshape %[[H]] {infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<6x4xf32>>]}
// CHECK: infir2.reshape %[[DLOGITS]] {infir2rt.buffers = [#infir2rt.buffer<scratch, 384, tensor<6x8xf32>>]}
// The rest of the freed logits and the constant's bytes: 256 to 384.
// CHECK: infir2.matmul {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch, 256, tensor<8x4xf32>>]
// CHECK: infir2.embedding_grad {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<8x4xf32>>]
// CHECK: infir2.add {{.*}}infir2rt.buffers = [#infir2rt.buffer<scratch, 128, tensor<8x4xf32>>]
// CHECK: infir2.add %[[ACC]], {{.*}}infir2rt.buffers = [#infir2rt.buffer<state, 256, tensor<8x4xf32>>]
// CHECK: return {infir2rt.copy_out = [#infir2rt.buffer<state, 384, tensor<f32>>, #infir2rt.buffer<state, 256, tensor<8x4xf32>>]}

// The optimizer step writes the master, the parameter's working copy and
// the gradient norm: the norm and the master in their slots, then the
// master is copied to the working copy's.
// CHECK-LABEL: func.func @optimizer_step(
// CHECK-SAME: infir2rt.scratch_bytes = 0 : i64, infir2rt.symbol = "infir2_optimizer_step"
// CHECK: return {infir2rt.copy_out = [#infir2rt.buffer<state, 448, tensor<8x4xf32>>, #infir2rt.buffer<state, 0, tensor<8x4xf32>>, #infir2rt.buffer<state, 704, tensor<f32>>]}

// The report: 128 bytes each of weights, masters and gradients, seven
// 64-byte input and output slots, and the train step's peak of 576 live
// arena bytes, first reached at the logits' gradient: the embedding output
// and the logits, which backward reads (saved, 320), and the constant and
// dLogits (workspace, 256; the loss is in its state slot). The trainer
// allocates the state and the largest arena, the train step's 576.
// REPORT: planned memory (batch 2 x seq 3 tokens, vocab 8)
// REPORT-NEXT: BF16 weights 0.000 GiB 128 bytes
// REPORT-NEXT: FP32 master weights 0.000 GiB 128 bytes
// REPORT-NEXT: optimizer moments 0.000 GiB 0 bytes
// REPORT-NEXT: gradients 0.000 GiB 128 bytes
// REPORT-NEXT: FP8 weight cache 0.000 GiB 0 bytes
// REPORT-NEXT: inputs 0.000 GiB 448 bytes
// REPORT-NEXT: activations saved for backward 0.000 GiB 320 bytes
// REPORT-NEXT: FP8 copies and scales 0.000 GiB 0 bytes
// REPORT-NEXT: workspace 0.000 GiB 256 bytes
// REPORT-NEXT: peak (training step) 0.000 GiB 1408 bytes
// REPORT: scratch arena of train_step 0.000 GiB 576 bytes
// REPORT: allocated (state + arena) 0.000 GiB 1408 bytes

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
    return %2, %10 : tensor<f32>, tensor<8x4xf32>
  }
  func.func @optimizer_step(%arg0: tensor<8x4xf32> {infir2.master_of = "embed"}, %arg1: tensor<8x4xf32> {infir2.grad_of = "embed"}, %arg2: tensor<f32> {infir2.input = "learning_rate"}, %arg3: tensor<f32> {infir2.input = "grad_scale"}) -> (tensor<8x4xf32> {infir2.master_of = "embed"}, tensor<8x4xf32> {infir2.working_copy_of = "embed"}, tensor<f32>) {
    %0 = infir2.global_norm %arg1 scale %arg3 : tensor<8x4xf32>
    %1 = infir2.sgd %arg0, %arg1, %arg2, %arg3, %0 {max_grad_norm = 1.000000e+00 : f64, weight_decay = 1.000000e-01 : f64} : tensor<8x4xf32>
    return %1, %1, %0 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>
  }
}
