// RUN: infir2-opt %s --split-input-file --infir2-optimizer --verify-diagnostics
// RUN: not infir2-opt %s --split-input-file --infir2-optimizer="optimizer=lion" 2>&1 | FileCheck %s --check-prefix=LION
// LION: for the --optimizer option: invalid value 'lion' (expected adamw or sgd)
// RUN: not infir2-opt %s --split-input-file --infir2-optimizer="eps=0" 2>&1 | FileCheck %s --check-prefix=EPS
// EPS: error: optimizer option eps = 0 is out of range (0, inf)
// RUN: not infir2-opt %s --split-input-file --infir2-optimizer="beta2=1" 2>&1 | FileCheck %s --check-prefix=BETA
// BETA: error: optimizer option beta2 = 1 is out of range [0, 1)
// RUN: not infir2-opt %s --split-input-file --infir2-optimizer="optimizer=sgd optimizer-state=bf16" 2>&1 | FileCheck %s --check-prefix=SGD-BF16
// SGD-BF16: error: optimizer-state=bf16 needs AdamW: SGD keeps no moments
// RUN: not infir2-opt %s --split-input-file --infir2-optimizer="optimizer-state=fp16" 2>&1 | FileCheck %s --check-prefix=FP16
// FP16: for the --optimizer-state option: invalid value 'fp16' (expected fp32 or bf16)
// RUN: not infir2-opt %s --split-input-file --infir2-optimizer="optimizer-state=bf16 beta2=0.999" 2>&1 | FileCheck %s --check-prefix=BF16-BETA2
// BF16-BETA2: error: optimizer-state=bf16 needs 1 - beta2 above 2^-8 (beta2 below 0.99609375), got beta2 = 0.999: a BF16 moment would round back to itself instead of decaying; keep optimizer-state=fp32 for it

// Tests that the forward function must exist.
// expected-error @below {{no function named 'forward' whose parameters to optimize}}
module {
  func.func @model() {
    return
  }
}

// -----

// Tests that there must be parameters.
// expected-error @+1 {{has no trainable parameters (no argument carries 'infir2.param')}}
func.func @forward(%x: tensor<4xf32>) -> tensor<f32> {
  %l = infir2.reduce_sum %x : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that an existing optimizer step is not overwritten.
// expected-error @below {{cannot create 'optimizer_step': a symbol of that name already exists}}
module {
  func.func @forward(%w: tensor<4xf32> {infir2.param = #infir2.param<"w", ones>}) -> tensor<f32> {
    %l = infir2.reduce_sum %w : tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
  func.func private @optimizer_step()
}
