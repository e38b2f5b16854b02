// RUN: infir2-opt %s --split-input-file --infir2-lower-to-runtime --verify-diagnostics

// Tests that the module must be planned.
// expected-error @+1 {{expects the module's 'infir2rt.plan' (run --infir2-plan-memory first)}}
module {
  func.func @f() {
    return
  }
}

// -----

// Tests that every argument a call reads must be placed.
module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = 64, batch = 1, seq = 1, vocab = 1, zero1_world_size = 0, slots = []>} {
  // expected-error @+1 {{'func.func' op has no buffer for argument #0 (run --infir2-plan-memory first)}}
  func.func @train_step(%x: tensor<4xf32>) attributes {infir2rt.symbol = "infir2_train_step", infir2rt.scratch_bytes = 64 : i64} {
    %y = infir2.silu %x {infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<4xf32>>]} : tensor<4xf32>
    return {infir2rt.copy_out = []}
  }
}

// -----

// Tests that every op must be placed.
module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = 64, batch = 1, seq = 1, vocab = 1, zero1_world_size = 0, slots = []>} {
  func.func @train_step(%x: tensor<4xf32> {infir2rt.buffer = #infir2rt.buffer<state, 0, tensor<4xf32>>}) attributes {infir2rt.symbol = "infir2_train_step", infir2rt.scratch_bytes = 64 : i64} {
    // expected-error @+1 {{'infir2.silu' op has no buffers (run --infir2-plan-memory first)}}
    %y = infir2.silu %x : tensor<4xf32>
    return {infir2rt.copy_out = []}
  }
}

// -----

// Tests that the results must have state slots to go to.
module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = 64, batch = 1, seq = 1, vocab = 1, zero1_world_size = 0, slots = []>} {
  func.func @train_step(%x: tensor<4xf32> {infir2rt.buffer = #infir2rt.buffer<state, 0, tensor<4xf32>>}) -> tensor<4xf32> attributes {infir2rt.symbol = "infir2_train_step", infir2rt.scratch_bytes = 64 : i64} {
    // expected-error @+1 {{'func.return' op has no state slots for the results (run --infir2-plan-memory first)}}
    return %x : tensor<4xf32>
  }
}

// -----

// Tests that only splat constants become fills.
module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = 64, batch = 1, seq = 1, vocab = 1, zero1_world_size = 0, slots = []>} {
  func.func @train_step() attributes {infir2rt.symbol = "infir2_train_step", infir2rt.scratch_bytes = 64 : i64} {
    // expected-error @+1 {{'arith.constant' op only splat float constants can be lowered}}
    %c = arith.constant {infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<2xf32>>]} dense<[1.0, 2.0]> : tensor<2xf32>
    return {infir2rt.copy_out = []}
  }
}

// -----

// Tests that an op with no runtime entry point is an error.
module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = 64, batch = 1, seq = 1, vocab = 1, zero1_world_size = 0, slots = []>} {
  func.func @train_step() attributes {infir2rt.symbol = "infir2_train_step", infir2rt.scratch_bytes = 64 : i64} {
    // expected-error @+1 {{'tensor.empty' op has no runtime entry point to lower to}}
    %e = tensor.empty() {infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<4xf32>>]} : tensor<4xf32>
    return {infir2rt.copy_out = []}
  }
}

// -----

// Tests that a planned step has its arena size.
module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = 64, batch = 1, seq = 1, vocab = 1, zero1_world_size = 0, slots = []>} {
  // expected-error @+1 {{'func.func' op is not a planned step: it needs a body of one block and 'infir2rt.scratch_bytes' (run --infir2-plan-memory first)}}
  func.func @train_step() attributes {infir2rt.symbol = "infir2_train_step"} {
    return {infir2rt.copy_out = []}
  }
}

// -----

// Tests that a planned step has a body.
module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = 64, batch = 1, seq = 1, vocab = 1, zero1_world_size = 0, slots = []>} {
  // expected-error @+1 {{'func.func' op is not a planned step: it needs a body of one block and 'infir2rt.scratch_bytes' (run --infir2-plan-memory first)}}
  func.func private @train_step() attributes {infir2rt.symbol = "infir2_train_step", infir2rt.scratch_bytes = 64 : i64}
}

// -----

// Tests that every buffer lies inside the state region.
module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = 64, batch = 1, seq = 1, vocab = 1, zero1_world_size = 0, slots = []>} {
  func.func @train_step(%x: tensor<16xf32> {infir2rt.buffer = #infir2rt.buffer<state, 32, tensor<16xf32>>}) attributes {infir2rt.symbol = "infir2_train_step", infir2rt.scratch_bytes = 64 : i64} {
    // expected-error @+1 {{'infir2.silu' op has #infir2rt.buffer<state, 32, tensor<16xf32>>, which ends past the state region (64 bytes)}}
    %y = infir2.silu %x {infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<16xf32>>]} : tensor<16xf32>
    return {infir2rt.copy_out = []}
  }
}

// -----

// Tests that every buffer lies inside the step's arena.
module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = 64, batch = 1, seq = 1, vocab = 1, zero1_world_size = 0, slots = []>} {
  func.func @train_step(%x: tensor<16xf32> {infir2rt.buffer = #infir2rt.buffer<state, 0, tensor<16xf32>>}) attributes {infir2rt.symbol = "infir2_train_step", infir2rt.scratch_bytes = 32 : i64} {
    // expected-error @+1 {{'infir2.silu' op has #infir2rt.buffer<scratch, 0, tensor<16xf32>>, which ends past the step's arena (32 bytes)}}
    %y = infir2.silu %x {infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<16xf32>>]} : tensor<16xf32>
    return {infir2rt.copy_out = []}
  }
}

// -----

// Tests that a call cannot read an argument of a region other than the
// step's (here an fp8.fused body's).
module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = 4096, batch = 1, seq = 1, vocab = 1, zero1_world_size = 0, slots = []>} {
  func.func @train_step() attributes {infir2rt.symbol = "infir2_train_step", infir2rt.scratch_bytes = 4096 : i64} {
    // expected-error @+1 {{'fp8.fused' op has a region argument the runtime calls cannot read}}
    %q, %s = fp8.fused -> (tensor<4x128xf8E4M3FN>, tensor<4x1xf32>) {
    ^bb0(%x: tensor<4x128xf32>):
      %n = infir2.silu %x {infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<4x128xf32>>]} : tensor<4x128xf32>
      %a, %b = fp8.quantize %n to e4m3 by #fp8.groups<128, dim = 1> scale pow2 {infir2rt.buffers = [#infir2rt.buffer<scratch, 2048, tensor<4x128xf8E4M3FN>>, #infir2rt.buffer<scratch, 2560, tensor<4x1xf32>>]}
          : tensor<4x128xf32> -> tensor<4x128xf8E4M3FN>, tensor<4x1xf32>
      fp8.yield %a, %b : tensor<4x128xf8E4M3FN>, tensor<4x1xf32>
    } {infir2rt.buffers = [#infir2rt.buffer<scratch, 2048, tensor<4x128xf8E4M3FN>>, #infir2rt.buffer<scratch, 2560, tensor<4x1xf32>>]}
    return {infir2rt.copy_out = []}
  }
}
