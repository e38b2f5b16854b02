// RUN: infir2-opt %s --split-input-file --infir2-data-parallel="bucket-mb=0.0009" | FileCheck %s
// RUN: infir2-opt %s --split-input-file --infir2-data-parallel="bucket-mb=0.0009" --infir2-data-parallel="bucket-mb=0.0009" | FileCheck %s --check-prefix=ONE
// RUN: not infir2-opt %s --split-input-file --infir2-data-parallel="bucket-mb=0" 2>&1 | FileCheck %s --check-prefix=BUCKET
// RUN: infir2-opt %s --split-input-file --infir2-data-parallel="zero1=true world-size=2 bucket-mb=0.0009" | FileCheck %s --check-prefix=ZERO
// RUN: infir2-opt %s --split-input-file --infir2-data-parallel="zero1=true world-size=2" --infir2-data-parallel="zero1=true world-size=2" | FileCheck %s --check-prefix=ZERO-ONCE

// Tests the buckets: 0.0009 MiB is 943 bytes, so the two 256-float (1 KiB)
// gradients go alone and the two 64-float ones share one; the optimizer
// reads the sums, and nothing else changes.
// CHECK-LABEL: func.func @optimizer_step
// CHECK-SAME: (%[[P:[^:]+]]: tensor<256xf32>, %[[G0:[^:]+]]: tensor<256xf32> {infir2.grad_of = "a"}, %[[G1:[^:]+]]: tensor<64xf32> {infir2.grad_of = "b"}, %[[G2:[^:]+]]: tensor<64xf32> {infir2.grad_of = "c"}, %[[G3:[^:]+]]: tensor<256xf32> {infir2.grad_of = "d"}, %[[S:[^:]+]]: tensor<f32>)
// CHECK-NEXT: %[[R0:.+]] = infir2.all_reduce %[[G0]] : tensor<256xf32>
// CHECK-NEXT: %[[R1:.+]]:2 = infir2.all_reduce %[[G1]], %[[G2]] : tensor<64xf32>, tensor<64xf32>
// CHECK-NEXT: %[[R3:.+]] = infir2.all_reduce %[[G3]] : tensor<256xf32>
// CHECK-NEXT: %[[N:.+]] = infir2.global_norm %[[R0]], %[[R1]]#0, %[[R1]]#1, %[[R3]] scale %[[S]]
// CHECK-NEXT: return %[[N]]
// ONE-LABEL: func.func @optimizer_step
// ONE-COUNT-3: infir2.all_reduce
// ONE-NOT: infir2.all_reduce
// BUCKET: error: bucket-mb must be positive, got 0

// With ZeRO-1 the same buckets are reduce-scattered (2 ranks: half the
// rows each) and the norm is taken over every rank's shards.
// ZERO-ONCE-LABEL: func.func @optimizer_step
// ZERO-ONCE-COUNT-1: infir2.reduce_scatter
// ZERO-ONCE-NOT: infir2.reduce_scatter
// ZERO-LABEL: func.func @optimizer_step
// ZERO-NEXT: %[[R0:.+]] = infir2.reduce_scatter %{{.+}} {world_size = 2 : i64} : tensor<256xf32> -> tensor<128xf32>
// ZERO-NEXT: %[[R1:.+]]:2 = infir2.reduce_scatter %{{.+}}, %{{.+}} {world_size = 2 : i64} : tensor<64xf32>, tensor<64xf32> -> tensor<32xf32>, tensor<32xf32>
// ZERO-NEXT: %[[R3:.+]] = infir2.reduce_scatter %{{.+}} {world_size = 2 : i64} : tensor<256xf32> -> tensor<128xf32>
// ZERO-NEXT: infir2.global_norm %[[R0]], %[[R1]]#0, %[[R1]]#1, %[[R3]] scale %{{.+}} {across_ranks}
func.func @optimizer_step(%p: tensor<256xf32>, %g0: tensor<256xf32> {infir2.grad_of = "a"},
                          %g1: tensor<64xf32> {infir2.grad_of = "b"}, %g2: tensor<64xf32> {infir2.grad_of = "c"},
                          %g3: tensor<256xf32> {infir2.grad_of = "d"}, %s: tensor<f32>) -> tensor<f32> {
  %n = infir2.global_norm %g0, %g1, %g2, %g3 scale %s : tensor<256xf32>, tensor<64xf32>, tensor<64xf32>, tensor<256xf32>
  return %n : tensor<f32>
}

// -----

// Tests ZeRO-1 on a whole AdamW step: a BF16 weight of 5 rows (2 ranks:
// shards of 3, the last padded) and an FP32 one of 4. The masters and
// moments become shards, in the arguments and in the results; the update
// and the cast work on shards; the working copies are gathered whole at
// the end, one all-gather per bucket.
// ZERO-LABEL: func.func @optimizer_step
// ZERO-SAME: (%[[M0:[^:]+]]: tensor<3x4xf32> {infir2.master_of = "w"}, %[[M1:[^:]+]]: tensor<2xf32> {infir2.master_of = "b"},
// ZERO-SAME: %[[G0:[^:]+]]: tensor<5x4xf32> {infir2.grad_of = "w"}, %[[G1:[^:]+]]: tensor<4xf32> {infir2.grad_of = "b"},
// ZERO-SAME: %{{[^:]+}}: tensor<3x4xf32> {infir2.moment1_of = "w"}, %{{[^:]+}}: tensor<2xf32> {infir2.moment1_of = "b"},
// ZERO-SAME: %{{[^:]+}}: tensor<3x4xf32> {infir2.moment2_of = "w"}, %{{[^:]+}}: tensor<2xf32> {infir2.moment2_of = "b"},
// ZERO-SAME: -> (tensor<3x4xf32> {infir2.master_of = "w"}, tensor<2xf32> {infir2.master_of = "b"}, tensor<3x4xf32> {infir2.moment1_of = "w"}, tensor<2xf32> {infir2.moment1_of = "b"}, tensor<3x4xf32> {infir2.moment2_of = "w"}, tensor<2xf32> {infir2.moment2_of = "b"}, tensor<5x4xbf16> {infir2.working_copy_of = "w"}, tensor<4xf32> {infir2.working_copy_of = "b"})
// ZERO-NEXT: %[[S:.+]]:2 = infir2.reduce_scatter %[[G0]], %[[G1]] {world_size = 2 : i64} : tensor<5x4xf32>, tensor<4xf32> -> tensor<3x4xf32>, tensor<2xf32>
// ZERO-NEXT: %[[N:.+]] = infir2.global_norm %[[S]]#0, %[[S]]#1 scale %{{.+}} {across_ranks}
// ZERO-NEXT: %[[W:[^,]+]], %{{.+}}, %{{.+}} = infir2.adamw %[[M0]], %[[S]]#0, {{.+}} : tensor<3x4xf32>
// ZERO-NEXT: %[[B:[^,]+]], %{{.+}}, %{{.+}} = infir2.adamw %[[M1]], %[[S]]#1, {{.+}} : tensor<2xf32>
// ZERO-NEXT: %[[C:.+]] = infir2.convert %[[W]] : tensor<3x4xf32> -> tensor<3x4xbf16>
// ZERO-NEXT: %[[A:.+]]:2 = infir2.all_gather %[[C]], %[[B]] {world_size = 2 : i64} : tensor<3x4xbf16>, tensor<2xf32> -> tensor<5x4xbf16>, tensor<4xf32>
// ZERO-NEXT: return %[[W]], %[[B]], {{.+}}, %[[A]]#0, %[[A]]#1
// ZERO-ONCE-LABEL: func.func @optimizer_step
// ZERO-ONCE-COUNT-1: infir2.reduce_scatter
// ZERO-ONCE-NOT: infir2.reduce_scatter
// ONE-LABEL: func.func @optimizer_step
// ONE-COUNT-1: infir2.all_reduce
// ONE-NOT: infir2.all_reduce
func.func @optimizer_step(%m0: tensor<5x4xf32> {infir2.master_of = "w"}, %m1: tensor<4xf32> {infir2.master_of = "b"},
                          %g0: tensor<5x4xf32> {infir2.grad_of = "w"}, %g1: tensor<4xf32> {infir2.grad_of = "b"},
                          %a0: tensor<5x4xf32> {infir2.moment1_of = "w"}, %a1: tensor<4xf32> {infir2.moment1_of = "b"},
                          %v0: tensor<5x4xf32> {infir2.moment2_of = "w"}, %v1: tensor<4xf32> {infir2.moment2_of = "b"},
                          %lr: tensor<f32>, %t: tensor<f32>, %s: tensor<f32>)
    -> (tensor<5x4xf32> {infir2.master_of = "w"}, tensor<4xf32> {infir2.master_of = "b"},
        tensor<5x4xf32> {infir2.moment1_of = "w"}, tensor<4xf32> {infir2.moment1_of = "b"},
        tensor<5x4xf32> {infir2.moment2_of = "w"}, tensor<4xf32> {infir2.moment2_of = "b"},
        tensor<5x4xbf16> {infir2.working_copy_of = "w"}, tensor<4xf32> {infir2.working_copy_of = "b"}) {
  %n = infir2.global_norm %g0, %g1 scale %s : tensor<5x4xf32>, tensor<4xf32>
  %w, %wa, %wv = infir2.adamw %m0, %g0, %a0, %v0, %lr, %t, %s, %n {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<5x4xf32>
  %b, %ba, %bv = infir2.adamw %m1, %g1, %a1, %v1, %lr, %t, %s, %n {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.0 : f64, max_grad_norm = 1.0 : f64} : tensor<4xf32>
  %c = infir2.convert %w : tensor<5x4xf32> -> tensor<5x4xbf16>
  return %w, %b, %wa, %ba, %wv, %bv, %c, %b : tensor<5x4xf32>, tensor<4xf32>, tensor<5x4xf32>, tensor<4xf32>, tensor<5x4xf32>, tensor<4xf32>, tensor<5x4xbf16>, tensor<4xf32>
}
