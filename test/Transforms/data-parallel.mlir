// RUN: infir2-opt %s --split-input-file --infir2-data-parallel="bucket-mb=0.0009" | FileCheck %s
// RUN: infir2-opt %s --split-input-file --infir2-data-parallel="bucket-mb=0.0009" --infir2-data-parallel="bucket-mb=0.0009" | FileCheck %s --check-prefix=ONE
// RUN: not infir2-opt %s --split-input-file --infir2-data-parallel="bucket-mb=0" 2>&1 | FileCheck %s --check-prefix=BUCKET

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
// ONE-COUNT-3: infir2.all_reduce
// ONE-NOT: infir2.all_reduce
// BUCKET: error: bucket-mb must be positive, got 0
func.func @optimizer_step(%p: tensor<256xf32>, %g0: tensor<256xf32> {infir2.grad_of = "a"},
                          %g1: tensor<64xf32> {infir2.grad_of = "b"}, %g2: tensor<64xf32> {infir2.grad_of = "c"},
                          %g3: tensor<256xf32> {infir2.grad_of = "d"}, %s: tensor<f32>) -> tensor<f32> {
  %n = infir2.global_norm %g0, %g1, %g2, %g3 scale %s : tensor<256xf32>, tensor<64xf32>, tensor<64xf32>, tensor<256xf32>
  return %n : tensor<f32>
}
