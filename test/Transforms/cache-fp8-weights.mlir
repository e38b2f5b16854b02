// RUN: infir2-opt %s --split-input-file --infir2-cache-fp8-weights | FileCheck %s
// RUN: infir2-opt %s --split-input-file --infir2-cache-fp8-weights --infir2-cache-fp8-weights | FileCheck %s

// Tests that a weight's quantizations by square blocks, as read by its
// forward GEMM and, transposed, by its dgrad GEMM, leave the training step
// for the cache: two arguments per layout, filled by @quantize_weights and
// refreshed by the optimizer step from the updated working copy, both
// layouts by one quantize_dual.

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<256x128xbf16> {infir2.param = #infir2.param<"w", normal(std = 2.000000e-02)>}
// CHECK-SAME: %[[D:[a-z0-9]+]]: tensor<256x128xf8E4M3FN> {infir2.fp8_cache = "w:data"}
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<2x1xf32> {infir2.fp8_cache = "w:scale"}
// CHECK-SAME: %[[DT:[a-z0-9]+]]: tensor<128x256xf8E4M3FN> {infir2.fp8_cache = "w.t:data"}
// CHECK-SAME: %[[ST:[a-z0-9]+]]: tensor<1x2xf32> {infir2.fp8_cache = "w.t:scale"}
// CHECK-NOT: fp8.quantize
// CHECK-NOT: infir2.transpose
// CHECK: return %[[D]], %[[S]], %[[DT]], %[[ST]]
func.func @train_step(%w: tensor<256x128xbf16> {infir2.param = #infir2.param<"w", normal(std = 0.02)>}) -> (tensor<256x128xf8E4M3FN>, tensor<2x1xf32>, tensor<128x256xf8E4M3FN>, tensor<1x2xf32>) {
  %q, %s = fp8.quantize %w to e4m3 by #fp8.blocks<128, 128> scale pow2 : tensor<256x128xbf16> -> tensor<256x128xf8E4M3FN>, tensor<2x1xf32>
  %wt = infir2.transpose %w [1, 0] : tensor<256x128xbf16> -> tensor<128x256xbf16>
  %qt, %st = fp8.quantize %wt to e4m3 by #fp8.blocks<128, 128> scale pow2 : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<1x2xf32>
  return %q, %s, %qt, %st : tensor<256x128xf8E4M3FN>, tensor<2x1xf32>, tensor<128x256xf8E4M3FN>, tensor<1x2xf32>
}

// Evaluation reads the cached forward copy, from the same slots.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[FD:[a-z0-9]+]]: tensor<256x128xf8E4M3FN> {infir2.fp8_cache = "w:data"}
// CHECK-SAME: %[[FS:[a-z0-9]+]]: tensor<2x1xf32> {infir2.fp8_cache = "w:scale"})
// CHECK-NOT: fp8.quantize
// CHECK: return %[[FD]], %[[FS]]
func.func @forward(%w: tensor<256x128xbf16> {infir2.param = #infir2.param<"w", normal(std = 0.02)>}) -> (tensor<256x128xf8E4M3FN>, tensor<2x1xf32>) {
  %q, %s = fp8.quantize %w to e4m3 by #fp8.blocks<128, 128> scale pow2 : tensor<256x128xbf16> -> tensor<256x128xf8E4M3FN>, tensor<2x1xf32>
  return %q, %s : tensor<256x128xf8E4M3FN>, tensor<2x1xf32>
}

// CHECK-LABEL: func.func @optimizer_step(
// CHECK-SAME: -> (tensor<256x128xbf16> {infir2.working_copy_of = "w"}, tensor<256x128xf8E4M3FN> {infir2.fp8_cache = "w:data"}, tensor<2x1xf32> {infir2.fp8_cache = "w:scale"}, tensor<128x256xf8E4M3FN> {infir2.fp8_cache = "w.t:data"}, tensor<1x2xf32> {infir2.fp8_cache = "w.t:scale"})
// CHECK: %[[NEW:.+]] = infir2.add
// CHECK: %[[Q:.+]], %[[QS:.+]], %[[QT:.+]], %[[QST:.+]] = fp8.quantize_dual %[[NEW]] to e4m3 by #fp8.blocks<128, 128> and transposed by #fp8.blocks<128, 128> scale pow2 : tensor<256x128xbf16> -> tensor<256x128xf8E4M3FN>, tensor<2x1xf32>, tensor<128x256xf8E4M3FN>, tensor<1x2xf32>
// CHECK: return %[[NEW]], %[[Q]], %[[QS]], %[[QT]], %[[QST]]
func.func @optimizer_step(%w: tensor<256x128xbf16>) -> (tensor<256x128xbf16> {infir2.working_copy_of = "w"}) {
  %0 = infir2.add %w, %w : tensor<256x128xbf16>, tensor<256x128xbf16>
  return %0 : tensor<256x128xbf16>
}

// CHECK-LABEL: func.func @quantize_weights(
// CHECK-SAME: %[[P:[a-z0-9]+]]: tensor<256x128xbf16> {infir2.param = #infir2.param<"w", normal(std = 2.000000e-02)>}
// CHECK-SAME: -> (tensor<256x128xf8E4M3FN> {infir2.fp8_cache = "w:data"}, tensor<2x1xf32> {infir2.fp8_cache = "w:scale"}, tensor<128x256xf8E4M3FN> {infir2.fp8_cache = "w.t:data"}, tensor<1x2xf32> {infir2.fp8_cache = "w.t:scale"})
// CHECK: %[[Q:.+]], %[[QS:.+]], %[[QT:.+]], %[[QST:.+]] = fp8.quantize_dual %[[P]]
// CHECK: return %[[Q]], %[[QS]], %[[QT]], %[[QST]]
// CHECK-NOT: func.func @quantize_weights

// -----

// Tests that with blocks that are not square, and for a transposed copy
// alone, the refresh quantizes the transpose on its own (with non-square
// blocks the codes of the transpose are not the transposed codes).

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: {infir2.fp8_cache = "a.t:data"}
// CHECK-SAME: {infir2.fp8_cache = "a.t:scale"}
// CHECK-SAME: {infir2.fp8_cache = "b:data"}
// CHECK-SAME: {infir2.fp8_cache = "b:scale"}
// CHECK-SAME: {infir2.fp8_cache = "b.t:data"}
// CHECK-SAME: {infir2.fp8_cache = "b.t:scale"}
// CHECK-NOT: fp8.quantize
func.func @train_step(%a: tensor<256x128xbf16> {infir2.param = #infir2.param<"a", normal(std = 0.02)>},
                      %b: tensor<256x128xbf16> {infir2.param = #infir2.param<"b", normal(std = 0.02)>}) -> (tensor<128x256xf8E4M3FN>, tensor<256x128xf8E4M3FN>, tensor<128x256xf8E4M3FN>) {
  %at = infir2.transpose %a [1, 0] : tensor<256x128xbf16> -> tensor<128x256xbf16>
  %qa, %sa = fp8.quantize %at to e4m3 by #fp8.blocks<128, 128> scale pow2 : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<1x2xf32>
  %qb, %sb = fp8.quantize %b to e4m3 by #fp8.blocks<128, 64> scale pow2 : tensor<256x128xbf16> -> tensor<256x128xf8E4M3FN>, tensor<2x2xf32>
  %bt = infir2.transpose %b [1, 0] : tensor<256x128xbf16> -> tensor<128x256xbf16>
  %qbt, %sbt = fp8.quantize %bt to e4m3 by #fp8.blocks<128, 64> scale pow2 : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<1x4xf32>
  return %qa, %qb, %qbt : tensor<128x256xf8E4M3FN>, tensor<256x128xf8E4M3FN>, tensor<128x256xf8E4M3FN>
}

// CHECK-LABEL: func.func @optimizer_step(
// CHECK: %[[AT:.+]] = infir2.transpose %arg0 [1, 0] : tensor<256x128xbf16> -> tensor<128x256xbf16>
// CHECK: fp8.quantize %[[AT]] to e4m3 by #fp8.blocks<128, 128>
// CHECK: fp8.quantize %arg1 to e4m3 by #fp8.blocks<128, 64>
// CHECK: %[[BT:.+]] = infir2.transpose %arg1 [1, 0] : tensor<256x128xbf16> -> tensor<128x256xbf16>
// CHECK: fp8.quantize %[[BT]] to e4m3 by #fp8.blocks<128, 64> scale pow2 : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<1x4xf32>
func.func @optimizer_step(%a: tensor<256x128xbf16>, %b: tensor<256x128xbf16>) -> (tensor<256x128xbf16> {infir2.working_copy_of = "a"}, tensor<256x128xbf16> {infir2.working_copy_of = "b"}) {
  return %a, %b : tensor<256x128xbf16>, tensor<256x128xbf16>
}

// -----

// Tests what stays in the step: a parameter quantized by groups (not a
// weight's blocks), a block quantization of something other than a
// parameter, a parameter the optimizer step does not update (no working
// copy), and a second quantization of a cached layout with other settings.

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: {infir2.fp8_cache = "w:data"}
// CHECK-SAME: {infir2.fp8_cache = "w:scale"}) ->
// CHECK: fp8.quantize %arg0 to e4m3 by #fp8.groups<128, dim = 1>
// CHECK: fp8.quantize %arg1 to e4m3 by #fp8.blocks<128, 128>
// CHECK: fp8.quantize %arg2 to e4m3 by #fp8.blocks<128, 128>
// CHECK: fp8.quantize %arg3 to e5m2 by #fp8.blocks<128, 128>
// CHECK-NEXT: return %{{.+}}, %{{.+}}, %{{.+}}, %arg4, %{{.+}} :
// CHECK-LABEL: func.func @optimizer_step(
// CHECK: fp8.quantize %arg1 to e4m3 by #fp8.blocks<128, 128>
// CHECK-NEXT: return
func.func @train_step(%g: tensor<128x128xbf16> {infir2.param = #infir2.param<"g", normal(std = 0.02)>},
                      %x: tensor<128x128xbf16>,
                      %frozen: tensor<128x128xbf16> {infir2.param = #infir2.param<"frozen", normal(std = 0.02)>},
                      %w: tensor<128x128xbf16> {infir2.param = #infir2.param<"w", normal(std = 0.02)>}) -> (tensor<128x128xf8E4M3FN>, tensor<128x128xf8E4M3FN>, tensor<128x128xf8E4M3FN>, tensor<128x128xf8E4M3FN>, tensor<128x128xf8E5M2>) {
  %q0, %s0 = fp8.quantize %g to e4m3 by #fp8.groups<128, dim = 1> scale pow2 : tensor<128x128xbf16> -> tensor<128x128xf8E4M3FN>, tensor<128x1xf32>
  %q1, %s1 = fp8.quantize %x to e4m3 by #fp8.blocks<128, 128> scale pow2 : tensor<128x128xbf16> -> tensor<128x128xf8E4M3FN>, tensor<1x1xf32>
  %q2, %s2 = fp8.quantize %frozen to e4m3 by #fp8.blocks<128, 128> scale pow2 : tensor<128x128xbf16> -> tensor<128x128xf8E4M3FN>, tensor<1x1xf32>
  %q3, %s3 = fp8.quantize %w to e4m3 by #fp8.blocks<128, 128> scale pow2 : tensor<128x128xbf16> -> tensor<128x128xf8E4M3FN>, tensor<1x1xf32>
  %q4, %s4 = fp8.quantize %w to e5m2 by #fp8.blocks<128, 128> scale pow2 : tensor<128x128xbf16> -> tensor<128x128xf8E5M2>, tensor<1x1xf32>
  return %q0, %q1, %q2, %q3, %q4 : tensor<128x128xf8E4M3FN>, tensor<128x128xf8E4M3FN>, tensor<128x128xf8E4M3FN>, tensor<128x128xf8E4M3FN>, tensor<128x128xf8E5M2>
}

func.func @optimizer_step(%g: tensor<128x128xbf16>, %w: tensor<128x128xbf16>) -> (tensor<128x128xbf16> {infir2.working_copy_of = "g"}, tensor<128x128xbf16> {infir2.working_copy_of = "w"}) {
  return %g, %w : tensor<128x128xbf16>, tensor<128x128xbf16>
}

// -----

// Tests that a module without an optimizer step is left alone.

// CHECK-LABEL: func.func @train_step(
// CHECK: fp8.quantize %arg0
// CHECK-NOT: func.func @quantize_weights
func.func @train_step(%w: tensor<128x128xbf16> {infir2.param = #infir2.param<"w", normal(std = 0.02)>}) -> tensor<128x128xf8E4M3FN> {
  %q, %s = fp8.quantize %w to e4m3 by #fp8.blocks<128, 128> scale pow2 : tensor<128x128xbf16> -> tensor<128x128xf8E4M3FN>, tensor<1x1xf32>
  return %q : tensor<128x128xf8E4M3FN>
}
