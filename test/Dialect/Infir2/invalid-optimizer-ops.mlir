// RUN: infir2-opt %s --split-input-file --verify-diagnostics

// Tests that AdamW's betas lie in [0, 1).
func.func @adamw_beta(%p: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{expects beta2 in [0, 1), got 1.000000e+00}}
  %0:3 = infir2.adamw %p, %p, %p, %p, %s, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 1.0 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<4xf32>
  return
}

// -----

// Tests that weight decay is non-negative.
func.func @sgd_decay(%p: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{expects a non-negative weight_decay, got -1.000000e-01}}
  %0 = infir2.sgd %p, %p, %s, %s, %s {weight_decay = -0.1 : f64, max_grad_norm = 1.0 : f64} : tensor<4xf32>
  return
}

// -----

// Tests that the clipping threshold is non-negative.
func.func @sgd_clip(%p: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{expects a non-negative max_grad_norm (0 disables clipping), got -1.000000e+00}}
  %0 = infir2.sgd %p, %p, %s, %s, %s {weight_decay = 0.0 : f64, max_grad_norm = -1.0 : f64} : tensor<4xf32>
  return
}

// -----

// Tests that masters and gradients are FP32.
func.func @adamw_bf16(%p: tensor<4xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit float values}}
  %0:3 = "infir2.adamw"(%p, %p, %p, %p, %s, %s, %s, %s) {beta1 = 0.9 : f64, beta2 = 0.9 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64}
      : (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>)
  return
}

// -----

// Tests that global_norm has something to measure.
func.func @global_norm_empty(%s: tensor<f32>) {
  // expected-error @+1 {{expects at least one gradient}}
  %0 = "infir2.global_norm"(%s) {operandSegmentSizes = array<i32: 0, 1>} : (tensor<f32>) -> tensor<f32>
  return
}

// -----

// Tests that an all-reduce has something to reduce.
func.func @all_reduce_empty() {
  // expected-error @+1 {{expects at least one tensor to reduce}}
  "infir2.all_reduce"() : () -> ()
  return
}

// -----

// Tests that an all-reduce's results have its operands' types.
func.func @all_reduce_types(%g: tensor<4xf32>) {
  // expected-error @+1 {{expects results of the operands' types}}
  %r = "infir2.all_reduce"(%g) : (tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

// Tests that an all-reduce sums FP32 tensors only.
func.func @all_reduce_bf16(%g: tensor<4xbf16>) {
  // expected-error @+1 {{operand #0 must be variadic of statically shaped tensor of 32-bit float values}}
  %r = infir2.all_reduce %g : tensor<4xbf16>
  return
}

// -----

// Tests that a reduce-scatter has something to reduce.
func.func @reduce_scatter_empty() {
  // expected-error @+1 {{expects at least one tensor}}
  "infir2.reduce_scatter"() {world_size = 2 : i64} : () -> ()
  return
}

// -----

// Tests that a reduce-scatter has one shard per operand.
func.func @reduce_scatter_count(%g: tensor<4xf32>) {
  // expected-error @+1 {{expects one result per operand, got 2 for 1}}
  %r:2 = "infir2.reduce_scatter"(%g) {world_size = 2 : i64} : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

// Tests that a shard has ceil(rows / world_size) rows: 5 over 2 is 3.
func.func @reduce_scatter_rows(%g: tensor<5x4xf32>) {
  // expected-error @+1 {{tensor #0: the shard of 'tensor<5x4xf32>' over 2 ranks is 'tensor<3x4xf32>', got 'tensor<2x4xf32>'}}
  %r = infir2.reduce_scatter %g {world_size = 2 : i64} : tensor<5x4xf32> -> tensor<2x4xf32>
  return
}

// -----

// Tests that a shard keeps the trailing dimensions.
func.func @reduce_scatter_columns(%g: tensor<4x4xf32>) {
  // expected-error @+1 {{tensor #0: the shard of 'tensor<4x4xf32>' over 2 ranks is 'tensor<2x4xf32>', got 'tensor<2x2xf32>'}}
  %r = infir2.reduce_scatter %g {world_size = 2 : i64} : tensor<4x4xf32> -> tensor<2x2xf32>
  return
}

// -----

// Tests that scalars have no rows to shard.
func.func @reduce_scatter_scalar(%g: tensor<f32>) {
  // expected-error @+1 {{tensor #0 is a scalar; shards are rows of a tensor}}
  %r = infir2.reduce_scatter %g {world_size = 2 : i64} : tensor<f32> -> tensor<f32>
  return
}

// -----

// Tests that the world has at least one rank.
func.func @reduce_scatter_world(%g: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'world_size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %r = infir2.reduce_scatter %g {world_size = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// Tests that reduce-scatter sums FP32 gradients only.
func.func @reduce_scatter_bf16(%g: tensor<4xbf16>) {
  // expected-error @+1 {{operand #0 must be variadic of statically shaped tensor of 32-bit float values}}
  %r = infir2.reduce_scatter %g {world_size = 2 : i64} : tensor<4xbf16> -> tensor<2xbf16>
  return
}

// -----

// Tests that an all-gather keeps the element type.
func.func @all_gather_types(%w: tensor<2xbf16>) {
  // expected-error @+1 {{tensor #0: element types differ ('f32' and 'bf16')}}
  %r = infir2.all_gather %w {world_size = 2 : i64} : tensor<2xbf16> -> tensor<4xf32>
  return
}

// -----

// Tests that an all-gather's operand is the result's shard.
func.func @all_gather_rows(%w: tensor<2xbf16>) {
  // expected-error @+1 {{tensor #0: the shard of 'tensor<8xbf16>' over 2 ranks is 'tensor<4xbf16>', got 'tensor<2xbf16>'}}
  %r = infir2.all_gather %w {world_size = 2 : i64} : tensor<2xbf16> -> tensor<8xbf16>
  return
}

// -----

// Tests that moments are FP32 or BF16, nothing else.
func.func @adamw_f16_moments(%p: tensor<4xf32>, %m: tensor<4xf16>, %s: tensor<f32>) {
  // expected-error @+1 {{operand #2 must be statically shaped tensor of 32-bit float or bfloat16 type values}}
  %0:3 = "infir2.adamw"(%p, %p, %m, %m, %s, %s, %s, %s) {beta1 = 0.9 : f64, beta2 = 0.9 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64}
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<4xf16>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf16>, tensor<4xf16>)
  return
}

// -----

// Tests that moments have the parameter's shape.
func.func @adamw_moment_shape(%p: tensor<4xf32>, %m: tensor<2xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{'infir2.adamw' op expects moments of the parameter's shape ('tensor<4xf32>'), got 'tensor<2xbf16>'}}
  %0:3 = "infir2.adamw"(%p, %p, %m, %m, %s, %s, %s, %s) {beta1 = 0.9 : f64, beta2 = 0.9 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64}
      : (tensor<4xf32>, tensor<4xf32>, tensor<2xbf16>, tensor<2xbf16>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<2xbf16>, tensor<2xbf16>)
  return
}

// -----

// Tests that both moments and their updates have one type.
func.func @adamw_moment_types(%p: tensor<4xf32>, %m: tensor<4xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{'infir2.adamw' op failed to verify that all of {moment1, moment2, new_moment1, new_moment2} have same type}}
  %0:3 = "infir2.adamw"(%p, %p, %m, %p, %s, %s, %s, %s) {beta1 = 0.9 : f64, beta2 = 0.9 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_grad_norm = 1.0 : f64}
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xbf16>, tensor<4xbf16>)
  return
}

// -----

// Tests that a group's moments have their parameters' shapes.
func.func @adamw_group_moment_shape(%a: tensor<4xf32>, %b: tensor<2xf32>, %mb: tensor<2xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{'infir2.adamw_group' op expects moments of the parameter's shape ('tensor<4xf32>'), got 'tensor<2xbf16>'}}
  %0:6 = "infir2.adamw_group"(%a, %b, %a, %b, %mb, %mb, %mb, %mb, %s, %s, %s, %s) <{beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, max_grad_norm = 1.0 : f64, weight_decays = array<f64: 0.1, 0.0>, working = array<i64>, operandSegmentSizes = array<i32: 2, 2, 2, 2, 1, 1, 1, 1>, resultSegmentSizes = array<i32: 2, 2, 2, 0>}> : (tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2xbf16>, tensor<2xbf16>, tensor<2xbf16>, tensor<2xbf16>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<2xf32>, tensor<2xbf16>, tensor<2xbf16>, tensor<2xbf16>, tensor<2xbf16>)
  return
}

// -----

// Tests that a group's moments share one element type.
func.func @adamw_group_moment_types(%a: tensor<4xf32>, %b: tensor<2xf32>, %ma: tensor<4xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{'infir2.adamw_group' op expects every moment in one element type ('bf16'), got 'tensor<2xf32>'}}
  %0:6 = "infir2.adamw_group"(%a, %b, %a, %b, %ma, %b, %ma, %b, %s, %s, %s, %s) <{beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, max_grad_norm = 1.0 : f64, weight_decays = array<f64: 0.1, 0.0>, working = array<i64>, operandSegmentSizes = array<i32: 2, 2, 2, 2, 1, 1, 1, 1>, resultSegmentSizes = array<i32: 2, 2, 2, 0>}> : (tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<2xf32>, tensor<4xbf16>, tensor<2xf32>, tensor<4xbf16>, tensor<2xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<2xf32>, tensor<4xbf16>, tensor<2xf32>, tensor<4xbf16>, tensor<2xf32>)
  return
}

// -----

// Tests that a group update has as many gradients as parameters.
func.func @adamw_group_0(%a: tensor<4xf32>, %b: tensor<2xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'infir2.adamw_group' op expects as many gradients, moments and updated tensors as parameters (2)}}
  %0:5 = "infir2.adamw_group"(%a, %b, %a, %a, %b, %a, %b, %s, %s, %s, %s) <{beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, max_grad_norm = 1.0 : f64, weight_decays = array<f64: 0.1, 0.0>, working = array<i64>, operandSegmentSizes = array<i32: 2, 1, 2, 2, 1, 1, 1, 1>, resultSegmentSizes = array<i32: 2, 1, 2, 0>}> : (tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>)
  return
}

// -----

// Tests that each gradient has its parameter's type.
func.func @adamw_group_1(%a: tensor<4xf32>, %b: tensor<2xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'infir2.adamw_group' op expects gradients and updated parameters of the parameters' types}}
  %0:6 = "infir2.adamw_group"(%a, %b, %b, %a, %a, %b, %a, %b, %s, %s, %s, %s) <{beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, max_grad_norm = 1.0 : f64, weight_decays = array<f64: 0.1, 0.0>, working = array<i64>, operandSegmentSizes = array<i32: 2, 2, 2, 2, 1, 1, 1, 1>, resultSegmentSizes = array<i32: 2, 2, 2, 0>}> : (tensor<4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<2xf32>)
  return
}

// -----

// Tests that there is one weight decay per parameter.
func.func @adamw_group_2(%a: tensor<4xf32>, %b: tensor<2xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'infir2.adamw_group' op expects one weight decay per parameter (2), got 1}}
  %p:2, %m:2, %v:2 = infir2.adamw_group (%a, %b) grads (%a, %b) moments (%a, %b) (%a, %b) lr %s step %s scale %s norm %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, max_grad_norm = 1.0 : f64, weight_decays = array<f64: 0.1>, working = array<i64>} : tensor<4xf32>, tensor<2xf32>
  return
}

// -----

// Tests that weight decays are not negative.
func.func @adamw_group_3(%a: tensor<4xf32>, %b: tensor<2xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'infir2.adamw_group' op expects a non-negative weight_decay, got -5.000000e-01}}
  %p:2, %m:2, %v:2 = infir2.adamw_group (%a, %b) grads (%a, %b) moments (%a, %b) (%a, %b) lr %s step %s scale %s norm %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, max_grad_norm = 1.0 : f64, weight_decays = array<f64: 0.1, -0.5>, working = array<i64>} : tensor<4xf32>, tensor<2xf32>
  return
}

// -----

// Tests the betas.
func.func @adamw_group_4(%a: tensor<4xf32>, %b: tensor<2xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'infir2.adamw_group' op expects beta1 in [0, 1), got 1.000000e+00}}
  %p:2, %m:2, %v:2 = infir2.adamw_group (%a, %b) grads (%a, %b) moments (%a, %b) (%a, %b) lr %s step %s scale %s norm %s {beta1 = 1.0 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, max_grad_norm = 1.0 : f64, weight_decays = array<f64: 0.1, 0.0>, working = array<i64>} : tensor<4xf32>, tensor<2xf32>
  return
}

// -----

// Tests that there is one working copy per index of `working`.
func.func @adamw_group_5(%a: tensor<4xf32>, %b: tensor<2xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'infir2.adamw_group' op expects one working copy per index of 'working' (1), got 0}}
  %p:2, %m:2, %v:2 = infir2.adamw_group (%a, %b) grads (%a, %b) moments (%a, %b) (%a, %b) lr %s step %s scale %s norm %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, max_grad_norm = 1.0 : f64, weight_decays = array<f64: 0.1, 0.0>, working = array<i64: 0>} : tensor<4xf32>, tensor<2xf32>
  return
}

// -----

// Tests that working copy indices are strictly increasing parameter indices.
func.func @adamw_group_6(%a: tensor<4xf32>, %b: tensor<2xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'infir2.adamw_group' op expects 'working' to be strictly increasing parameter indices below 2}}
  %p:2, %m:2, %v:2, %w:2 = infir2.adamw_group (%a, %b) grads (%a, %b) moments (%a, %b) (%a, %b) lr %s step %s scale %s norm %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, max_grad_norm = 1.0 : f64, weight_decays = array<f64: 0.1, 0.0>, working = array<i64: 1, 1>} : tensor<4xf32>, tensor<2xf32> -> tensor<2xbf16>, tensor<2xbf16>
  return
}

// -----

// Tests that a working copy has its parameter's shape.
func.func @adamw_group_7(%a: tensor<4xf32>, %b: tensor<2xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'infir2.adamw_group' op expects working copy #0 of parameter #1's shape, got 'tensor<4xbf16>'}}
  %p:2, %m:2, %v:2, %w = infir2.adamw_group (%a, %b) grads (%a, %b) moments (%a, %b) (%a, %b) lr %s step %s scale %s norm %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, max_grad_norm = 1.0 : f64, weight_decays = array<f64: 0.1, 0.0>, working = array<i64: 1>} : tensor<4xf32>, tensor<2xf32> -> tensor<4xbf16>
  return
}

// -----

// Tests that a group's types are tensors (its custom type list parses any).
func.func @adamw_group_scalar_types(%a: f32, %s: tensor<f32>) {
  // (Reported where the type list ends.)
  // expected-error @+2 {{expects tensor parameters, got 'f32'}}
  %p, %m, %v = infir2.adamw_group (%a) grads (%a) moments (%a) (%a) lr %s step %s scale %s norm %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, max_grad_norm = 1.0 : f64, weight_decays = array<f64: 0.1>, working = array<i64>} : f32
  return
}

