// RUN: infir2-opt %s --split-input-file --infir2-data-parallel="zero1=true world-size=2" --verify-diagnostics
// RUN: not infir2-opt %s --split-input-file --infir2-data-parallel="zero1=true" 2>&1 | FileCheck %s --check-prefix=WORLD

// WORLD: error: zero1 needs world-size=N, the number of data-parallel ranks (got 0)
// RUN: not infir2-opt %s --split-input-file --infir2-data-parallel="world-size=4" 2>&1 | FileCheck %s --check-prefix=NOZERO1
// NOZERO1: error: world-size=4 is for zero1=true only: the gradient all-reduce runs at any world size

// Tests that ZeRO-1 refuses a step that already all-reduces.
// expected-error @+1 {{already all-reduces its gradients; ZeRO-1 shards a step that is not yet data-parallel}}
func.func @optimizer_step(%g: tensor<4xf32> {infir2.grad_of = "a"}) -> tensor<4xf32> {
  %r = infir2.all_reduce %g : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Tests that a scalar optimizer state has no rows to shard.
// expected-error @+1 {{argument #0 is a scalar; ZeRO-1 shards rows}}
func.func @optimizer_step(%m: tensor<f32> {infir2.master_of = "a"}, %g: tensor<4xf32> {infir2.grad_of = "a"}) -> tensor<f32> {
  return %m : tensor<f32>
}

// -----

// Tests that an op reading a gradient sum that the pass cannot shard is
// named.
func.func @optimizer_step(%g: tensor<4xf32> {infir2.grad_of = "a"}) -> tensor<4xf32> {
  // expected-error @+1 {{'infir2.add' op reads the optimizer state or a gradient sum, which ZeRO-1 would shard, and the pass does not know how to shard it}}
  %r = infir2.add %g, %g : tensor<4xf32>, tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Tests that a sharded value returned as something other than optimizer
// state or a working copy is refused.
// expected-error @+1 {{result #0 is a shard but not optimizer state after ZeRO-1 sharding}}
func.func @optimizer_step(%m: tensor<4xf32> {infir2.master_of = "a"}, %g: tensor<4xf32> {infir2.grad_of = "a"}) -> tensor<4xf32> {
  return %m : tensor<4xf32>
}
