// RUN: infir2-opt %s --split-input-file --infir2-insert-quantization | FileCheck %s

// Tests the forward GEMM of a linear layer: x in 1x128 groups along K, the
// weight (already [N, K]) in 128x128 blocks, both E4M3, then one
// scaled_matmul in the original result type, carrying the decision and the
// weight's name.
// CHECK-LABEL: func.func @fprop
// CHECK-SAME: (%[[W:[^:]+]]: tensor<256x256xbf16> {{.*}}, %[[X:[^:]+]]: tensor<2x128x256xbf16>)
// CHECK: %[[XQ:.+]], %[[XS:.+]] = fp8.quantize %[[X]] to e4m3 by #fp8.groups<128, dim = 2> scale pow2 : tensor<2x128x256xbf16> -> tensor<2x128x256xf8E4M3FN>, tensor<2x128x2xf32>
// CHECK: %[[WQ:.+]], %[[WS:.+]] = fp8.quantize %[[W]] to e4m3 by #fp8.blocks<128, 128> scale pow2 : tensor<256x256xbf16> -> tensor<256x256xf8E4M3FN>, tensor<2x2xf32>
// CHECK: %[[Y:.+]] = fp8.scaled_matmul (%[[XQ]], %[[XS]] by #fp8.groups<128, dim = 2>), (%[[WQ]], %[[WS]] by #fp8.blocks<128, 128>) {fp8.decision = #fp8.decision<precision = fp8, role = fprop
// CHECK-SAME: infir2.gemm_weight = "w"
// CHECK-SAME: -> tensor<2x128x256xbf16>
// CHECK-NOT: infir2.matmul
// CHECK: return %[[Y]]
func.func @fprop(%w: tensor<256x256xbf16> {infir2.param = #infir2.param<"w", normal(std = 0.02)>}, %x: tensor<2x128x256xbf16>) -> tensor<2x128x256xbf16> {
  %y = infir2.matmul %x, %w {transpose_rhs, fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.groups<128, dim = 2>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<2x128x256xbf16>, tensor<256x256xbf16> -> tensor<2x128x256xbf16>
  return %y : tensor<2x128x256xbf16>
}

// -----

// Tests the gradient GEMMs: dgrad uses the weight K-first, so it is
// transposed before quantization (blocks stay 128x128); wgrad contracts over
// tokens, so both operands are transposed to [., T] and quantized in 1x128
// groups along tokens, now their last dimension; the E5M2 gradient of the
// hybrid format is kept. The output gradient is read in both layouts, so one
// quantize_dual makes both copies and no transpose of it remains; the weight
// and the activation are read in one layout each and keep a plain quantize.
// CHECK-LABEL: func.func @grads
// CHECK-SAME: (%[[W:.+]]: tensor<256x512xbf16>, %[[DY:.+]]: tensor<256x256xbf16>, %[[X:.+]]: tensor<256x512xbf16>)
// CHECK: %[[DYQ:.+]], %[[DYS:.+]], %[[DYQT:.+]], %[[DYST:.+]] = fp8.quantize_dual %[[DY]] to e5m2 by #fp8.groups<128, dim = 1> and transposed by #fp8.groups<128, dim = 1> scale pow2 : tensor<256x256xbf16> -> tensor<256x256xf8E5M2>, tensor<256x2xf32>, tensor<256x256xf8E5M2>, tensor<256x2xf32>
// CHECK: %[[WT:.+]] = infir2.transpose %[[W]] [1, 0] : tensor<256x512xbf16> -> tensor<512x256xbf16>
// CHECK: fp8.quantize %[[WT]] to e4m3 by #fp8.blocks<128, 128>
// CHECK: fp8.scaled_matmul (%[[DYQ]], %[[DYS]] by #fp8.groups<128, dim = 1>), {{.*}} {fp8.decision = #fp8.decision<precision = fp8, role = dgrad, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e5m2
// CHECK-SAME: -> tensor<256x512xbf16>
// CHECK-NOT: infir2.transpose %[[DY]]
// CHECK: %[[XT:.+]] = infir2.transpose %[[X]] [1, 0] : tensor<256x512xbf16> -> tensor<512x256xbf16>
// CHECK: fp8.quantize %[[XT]] to e4m3 by #fp8.groups<128, dim = 1> scale pow2 : tensor<512x256xbf16> -> tensor<512x256xf8E4M3FN>, tensor<512x2xf32>
// CHECK: fp8.scaled_matmul (%[[DYQT]], %[[DYST]] by #fp8.groups<128, dim = 1>), {{.*}} {fp8.decision = #fp8.decision<precision = fp8, role = wgrad, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.groups<128, dim = 1>
// CHECK-SAME: infir2.gemm_role = "wgrad"
// CHECK-SAME: -> tensor<256x512xf32>
func.func @grads(%w: tensor<256x512xbf16>, %dy: tensor<256x256xbf16>, %x: tensor<256x512xbf16>) -> (tensor<256x512xbf16>, tensor<256x512xf32>) {
  %dx = infir2.matmul %dy, %w {infir2.gemm_role = "dgrad", infir2.gemm_grad_operand = 0 : i64,
      fp8.decision = #fp8.decision<precision = fp8, role = dgrad, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e5m2, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<256x256xbf16>, tensor<256x512xbf16> -> tensor<256x512xbf16>
  %dw = infir2.matmul %dy, %x {transpose_lhs, infir2.gemm_role = "wgrad", infir2.gemm_grad_operand = 0 : i64,
      fp8.decision = #fp8.decision<precision = fp8, role = wgrad, lhs = #fp8.groups<128, dim = 0>, rhs = #fp8.groups<128, dim = 0>, lhs_format = e5m2, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<256x256xbf16>, tensor<256x512xbf16> -> tensor<256x512xf32>
  return %dx, %dw : tensor<256x512xbf16>, tensor<256x512xf32>
}

// -----

// Tests a whole linear layer (fprop, dgrad, wgrad): the activation, the
// weight and the output gradient are each quantized once, in both layouts,
// where the forward pass first needs them; the three transposes are gone.
// CHECK-LABEL: func.func @layer
// CHECK-SAME: (%[[W:.+]]: tensor<256x512xbf16>, %[[X:.+]]: tensor<256x512xbf16>, %[[DY:.+]]: tensor<256x256xbf16>)
// CHECK: %[[XQ:.+]], %[[XS:.+]], %[[XQT:.+]], %[[XST:.+]] = fp8.quantize_dual %[[X]] to e4m3 by #fp8.groups<128, dim = 1> and transposed by #fp8.groups<128, dim = 1> scale pow2 : tensor<256x512xbf16> -> tensor<256x512xf8E4M3FN>, tensor<256x4xf32>, tensor<512x256xf8E4M3FN>, tensor<512x2xf32>
// CHECK: %[[WQ:.+]], %[[WS:.+]], %[[WQT:.+]], %[[WST:.+]] = fp8.quantize_dual %[[W]] to e4m3 by #fp8.blocks<128, 128> and transposed by #fp8.blocks<128, 128> scale pow2 : tensor<256x512xbf16> -> tensor<256x512xf8E4M3FN>, tensor<2x4xf32>, tensor<512x256xf8E4M3FN>, tensor<4x2xf32>
// CHECK: fp8.scaled_matmul (%[[XQ]], %[[XS]] by {{.*}}), (%[[WQ]], %[[WS]] by
// CHECK: %[[DYQ:.+]], %[[DYS:.+]], %[[DYQT:.+]], %[[DYST:.+]] = fp8.quantize_dual %[[DY]]
// CHECK: fp8.scaled_matmul (%[[DYQ]], %[[DYS]] by {{.*}}), (%[[WQT]], %[[WST]] by
// CHECK: fp8.scaled_matmul (%[[DYQT]], %[[DYST]] by {{.*}}), (%[[XQT]], %[[XST]] by
// CHECK-NOT: infir2.transpose
// CHECK-NOT: fp8.quantize
func.func @layer(%w: tensor<256x512xbf16>, %x: tensor<256x512xbf16>, %dy: tensor<256x256xbf16>) -> (tensor<256x256xbf16>, tensor<256x512xbf16>, tensor<256x512xf32>) {
  %y = infir2.matmul %x, %w {transpose_rhs, fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<256x512xbf16>, tensor<256x512xbf16> -> tensor<256x256xbf16>
  %dx = infir2.matmul %dy, %w {fp8.decision = #fp8.decision<precision = fp8, role = dgrad, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<256x256xbf16>, tensor<256x512xbf16> -> tensor<256x512xbf16>
  %dw = infir2.matmul %dy, %x {transpose_lhs, fp8.decision = #fp8.decision<precision = fp8, role = wgrad, lhs = #fp8.groups<128, dim = 0>, rhs = #fp8.groups<128, dim = 0>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<256x256xbf16>, tensor<256x512xbf16> -> tensor<256x512xf32>
  return %y, %dx, %dw : tensor<256x256xbf16>, tensor<256x512xbf16>, tensor<256x512xf32>
}

// -----

// Tests that a parameter's two copies are not merged: the dgrad copy is made
// where dgrad reads it, so it does not live from the forward pass on.
// CHECK-LABEL: func.func @weight_param
// CHECK-SAME: (%[[W:[^:]+]]: tensor<256x512xbf16>
// CHECK-NOT: fp8.quantize_dual %[[W]]
// CHECK: fp8.quantize %[[W]] to e4m3 by #fp8.blocks<128, 128>
// CHECK: %[[WT:.+]] = infir2.transpose %[[W]] [1, 0]
// CHECK: fp8.quantize %[[WT]] to e4m3 by #fp8.blocks<128, 128>
func.func @weight_param(%w: tensor<256x512xbf16> {infir2.param = #infir2.param<"w", normal(std = 0.02)>}, %x: tensor<256x512xbf16>, %dy: tensor<256x256xbf16>) -> (tensor<256x256xbf16>, tensor<256x512xbf16>) {
  %y = infir2.matmul %x, %w {transpose_rhs, fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<256x512xbf16>, tensor<256x512xbf16> -> tensor<256x256xbf16>
  %dx = infir2.matmul %dy, %w {fp8.decision = #fp8.decision<precision = fp8, role = dgrad, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<256x256xbf16>, tensor<256x512xbf16> -> tensor<256x512xbf16>
  return %y, %dx : tensor<256x256xbf16>, tensor<256x512xbf16>
}

// -----

// Tests that the two layouts are not merged when they disagree on the format
// (an E5M2 copy and an E4M3 copy of one tensor are two different passes).
// CHECK-LABEL: func.func @formats_differ
// CHECK-NOT: fp8.quantize_dual
// CHECK: fp8.quantize %{{.+}} to e4m3
// CHECK: infir2.transpose
// CHECK: fp8.quantize %{{.+}} to e5m2
func.func @formats_differ(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>) -> (tensor<256x256xbf16>, tensor<256x256xbf16>) {
  %0 = infir2.matmul %a, %b {transpose_rhs, fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<256x256xbf16>, tensor<256x256xbf16> -> tensor<256x256xbf16>
  %1 = infir2.matmul %b, %a {fp8.decision = #fp8.decision<precision = fp8, role = dgrad, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e5m2, scales = pow2, reason = "x">}
      : tensor<256x256xbf16>, tensor<256x256xbf16> -> tensor<256x256xbf16>
  return %0, %1 : tensor<256x256xbf16>, tensor<256x256xbf16>
}

// -----

// Tests linalg: the [K, N] operand is transposed to [N, K]; a zero-filled init
// is dropped, any other init is added back.
// CHECK-LABEL: func.func @linalg
// CHECK: %[[BT:.+]] = infir2.transpose %{{.+}} [1, 0] : tensor<256x128xf32> -> tensor<128x256xf32>
// CHECK: %[[Y0:.+]] = fp8.scaled_matmul
// CHECK-NOT: infir2.add %[[Y0]]
// CHECK: %[[Y1:.+]] = fp8.scaled_matmul
// CHECK: %[[SUM:.+]] = infir2.add %[[Y1]], %[[C:.+]] : tensor<128x128xf32>, tensor<128x128xf32>
// CHECK: return %[[Y0]], %[[SUM]]
func.func @linalg(%a: tensor<128x256xf32>, %b: tensor<256x128xf32>, %c: tensor<128x128xf32>) -> (tensor<128x128xf32>, tensor<128x128xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x128xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<128x128xf32>) -> tensor<128x128xf32>
  %0 = linalg.matmul {fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      ins(%a, %b : tensor<128x256xf32>, tensor<256x128xf32>) outs(%z : tensor<128x128xf32>) -> tensor<128x128xf32>
  %1 = linalg.matmul {fp8.decision = #fp8.decision<precision = fp8, role = fprop, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.blocks<128, 128>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      ins(%a, %b : tensor<128x256xf32>, tensor<256x128xf32>) outs(%c : tensor<128x128xf32>) -> tensor<128x128xf32>
  return %0, %1 : tensor<128x128xf32>, tensor<128x128xf32>
}

// -----

// Tests that GEMMs without an FP8 decision are left alone.
// CHECK-LABEL: func.func @high
// CHECK-NOT: fp8.quantize
// CHECK: infir2.matmul
func.func @high(%a: tensor<128x128xbf16>) -> tensor<128x128xbf16> {
  %0 = infir2.matmul %a, %a {fp8.decision = #fp8.decision<precision = high, role = fprop, reason = "x">} : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xbf16>
  return %0 : tensor<128x128xbf16>
}

// -----

// Tests that a GEMM's accumulator stays the FP8 GEMM's.
// CHECK-LABEL: func.func @accumulated
// CHECK-SAME: %[[ACC:[^:]+]]: tensor<256x256xf32>)
// CHECK: fp8.scaled_matmul ({{.*}}) acc(%[[ACC]] : tensor<256x256xf32>) {fp8.decision
// CHECK-SAME: -> tensor<256x256xf32>
func.func @accumulated(%dy: tensor<128x256xbf16>, %x: tensor<128x256xbf16>, %acc: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %g = infir2.matmul %dy, %x acc(%acc : tensor<256x256xf32>) {transpose_lhs, fp8.decision = #fp8.decision<precision = fp8, role = wgrad, lhs = #fp8.groups<128, dim = 1>, rhs = #fp8.groups<128, dim = 1>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<128x256xbf16>, tensor<128x256xbf16> -> tensor<256x256xf32>
  return %g : tensor<256x256xf32>
}

// -----

// Tests MXFP8 decisions: E8M0 scales (the type #fp8.mx fixes), and the
// weight of a dgrad transposed to K-last with its blocks moved along (dim 0
// of [N, K] becomes dim 1 of its [K, N] transpose).
// CHECK-LABEL: func.func @mxfp8
// CHECK-SAME: (%[[W:.+]]: tensor<256x512xbf16> {{.*}}, %[[DY:.+]]: tensor<128x256xbf16>)
// CHECK: fp8.quantize %[[DY]] to e4m3 by #fp8.mx<dim = 1> scale pow2 : tensor<128x256xbf16> -> tensor<128x256xf8E4M3FN>, tensor<128x8xf8E8M0FNU>
// CHECK: %[[WT:.+]] = infir2.transpose %[[W]] [1, 0] : tensor<256x512xbf16> -> tensor<512x256xbf16>
// CHECK: fp8.quantize %[[WT]] to e4m3 by #fp8.mx<dim = 1> scale pow2 : tensor<512x256xbf16> -> tensor<512x256xf8E4M3FN>, tensor<512x8xf8E8M0FNU>
// CHECK: fp8.scaled_matmul ({{.*}} by #fp8.mx<dim = 1>), ({{.*}} by #fp8.mx<dim = 1>)
func.func @mxfp8(%w: tensor<256x512xbf16> {infir2.param = #infir2.param<"w", normal(std = 0.02)>}, %dy: tensor<128x256xbf16>) -> tensor<128x512xbf16> {
  %dx = infir2.matmul %dy, %w {infir2.gemm_role = "dgrad", infir2.gemm_weight = "w", infir2.gemm_grad_operand = 0 : i64, fp8.decision = #fp8.decision<precision = fp8, role = dgrad, lhs = #fp8.mx<dim = 1>, rhs = #fp8.mx<dim = 0>, lhs_format = e4m3, rhs_format = e4m3, scales = pow2, reason = "x">}
      : tensor<128x256xbf16>, tensor<256x512xbf16> -> tensor<128x512xbf16>
  return %dx : tensor<128x512xbf16>
}
