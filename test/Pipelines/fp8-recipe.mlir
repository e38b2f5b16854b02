// Tests --fp8-recipe on the forward-only example: it derives the training and
// optimizer steps, then quantizes every linear layer of the forward and of
// fprop/dgrad/wgrad in the training step (14 + 42 FP8 GEMMs), keeps the LM
// head in high precision, and verifies the result.
// RUN: infir2-opt %examples/tiny-qwen/model.mlir --fp8-recipe -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: grep -c 'fp8.scaled_matmul (' %t.mlir | FileCheck %s --check-prefix=FP8GEMMS
// RUN: grep -c 'precision = high' %t.mlir | FileCheck %s --check-prefix=HIGH
// FP8GEMMS: 56
// HIGH: 4
// CHECK-LABEL: func.func @forward(
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<256x256xf8E4M3FN> {infir2.fp8_cache = "model.layers.0.self_attn.q_proj.weight:data"}
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<2x2xf32> {infir2.fp8_cache = "model.layers.0.self_attn.q_proj.weight:scale"}
// CHECK: fp8.quantize_dual {{.*}} by #fp8.groups<128, dim = 2> and transposed by #fp8.groups<128, dim = 1> scale pow2
// CHECK-NOT: fp8.quantize {{.*}} by #fp8.blocks
// CHECK: fp8.scaled_matmul ({{.*}}), (%[[W]], %[[S]] by #fp8.blocks<128, 128>)
// CHECK-NOT: fp8.quantize {{.*}} by #fp8.blocks
// CHECK: infir2.matmul {{.*}} {fp8.decision = #fp8.decision<precision = high, role = fprop, reason = "the LM head stays in high precision">
// CHECK-NOT: fp8.quantize {{.*}} by #fp8.blocks
// CHECK-LABEL: func.func @optimizer_step(
// CHECK: infir2.adamw
// CHECK: fp8.quantize_dual {{.*}} by #fp8.blocks<128, 128> and transposed by #fp8.blocks<128, 128> scale pow2
// CHECK-LABEL: func.func @quantize_weights(

// Running the recipe again on its own output changes nothing.
// RUN: infir2-opt %t.mlir --fp8-recipe -o %t.again.mlir
// RUN: diff %t.mlir %t.again.mlir

// The options reach the passes.
// RUN: infir2-opt %examples/tiny-qwen/model.mlir --fp8-recipe="granularity=tensorwise format=hybrid scales=fp32 optimizer=sgd" | FileCheck %s --check-prefix=OPTS
// OPTS: fp8.quantize_dual {{.*}} to e5m2 by #fp8.tensorwise and transposed by #fp8.tensorwise scale fp32
// OPTS: infir2.sgd
// RUN: infir2-opt %examples/tiny-qwen/model.mlir --fp8-recipe="keep-first-last=1" | FileCheck %s --check-prefix=KEEP
// KEEP-NOT: fp8.scaled_matmul

// The BF16 baseline: the same steps, no FP8.
// RUN: infir2-opt %examples/tiny-qwen/model.mlir --bf16-recipe | FileCheck %s --check-prefix=BF16
// BF16-LABEL: func.func @train_step(
// BF16-NOT: fp8.
// BF16-LABEL: func.func @optimizer_step(

// The report after quantization: FP8 GEMMs keep their names and decisions.
// RUN: infir2-opt %examples/tiny-qwen/model.mlir --fp8-recipe --infir2-fp8-report=to-stdout -o /dev/null | FileCheck %s --check-prefix=REPORT
// REPORT-LABEL: @train_step: 45 GEMMs
// REPORT-DAG: model.layers.1.mlp.down_proj.weight wgrad 256x768x512 fp8 e4m3 1x128@1 e4m3 1x128@1 linear layer
// REPORT-DAG: model.embed_tokens.weight fprop 512x256x256 high the LM head stays in high precision
// REPORT: fprop: 14 of 15 GEMMs in FP8, 96.0% of their flops
// REPORT: wgrad: 14 of 15 GEMMs in FP8, 96.0% of their flops
