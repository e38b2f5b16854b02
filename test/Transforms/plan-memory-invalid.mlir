// RUN: infir2-opt %s --split-input-file --infir2-plan-memory --verify-diagnostics

// Tests that planning needs a training step and an optimizer step.
// expected-error @+1 {{expects @train_step and @optimizer_step (run a recipe pipeline, e.g. --fp8-recipe or --bf16-recipe, first)}}
module {
  func.func @forward() {
    return
  }
}

// -----

// Tests that a step must have a body.
// expected-error @+1 {{expects @train_step to have a body of one block}}
func.func private @train_step(tensor<2x3xi32>) -> tensor<f32>
func.func @optimizer_step() {
  return
}

// -----

// Tests that every argument is a statically shaped tensor.
// expected-error @+1 {{argument #1 is not a statically shaped tensor}}
func.func @train_step(%lr: tensor<f32> {infir2.input = "learning_rate"}, %n: tensor<?x8xf32>) {
  return
}
func.func @optimizer_step() {
  return
}

// -----

// Tests that every argument has a role the trainer fills.
// expected-error @+1 {{argument #1 of @train_step has no role the trainer can fill (not a parameter, state tensor, token ids, targets, loss mask, positions or segments)}}
func.func @train_step(%lr: tensor<f32> {infir2.input = "learning_rate"}, %x: tensor<4xf32>) {
  return
}
func.func @optimizer_step() {
  return
}

// -----

// Tests that a state tensor keeps one type across the steps.
func.func @train_step(%lr: tensor<f32> {infir2.input = "learning_rate"}, %g: tensor<8x4xf32> {infir2.grad_of = "embed"}) {
  return
}
// expected-error @+1 {{state tensor grad 'embed' is 'tensor<4x8xf32>' here but 'tensor<8x4xf32>' elsewhere}}
func.func @optimizer_step(%g: tensor<4x8xf32> {infir2.grad_of = "embed"}) {
  return
}

// -----

// Tests that every result is a statically shaped tensor.
// expected-error @+1 {{result #0 of @train_step is not a statically shaped tensor}}
func.func @train_step(%lr: tensor<f32> {infir2.input = "learning_rate"}) -> f32 {
  %c = arith.constant 1.0 : f32
  return %c : f32
}
func.func @optimizer_step() {
  return
}

// -----

// Tests that every result has a state slot to go to.
// expected-error @+1 {{result #0 of @train_step has no state slot to go to}}
func.func @train_step(%lr: tensor<f32> {infir2.input = "learning_rate"}) -> tensor<4xf32> {
  %c = arith.constant dense<1.0> : tensor<4xf32>
  return %c : tensor<4xf32>
}
func.func @optimizer_step() {
  return
}

// -----

// Tests that every value a step computes is a statically shaped tensor.
func.func @train_step(%lr: tensor<f32> {infir2.input = "learning_rate"}) {
  // expected-error @+1 {{result is not a statically shaped tensor}}
  %c = arith.constant 1.0 : f32
  return
}
func.func @optimizer_step() {
  return
}

// -----

// Tests that the batch geometry comes from token ids and a loss.
// expected-error @+1 {{expects token ids of shape [batch, seq] and a cross_entropy loss}}
func.func @train_step(%lr: tensor<f32> {infir2.input = "learning_rate"}) {
  return
}
func.func @optimizer_step() {
  return
}
