// RUN: infir2-opt %s --split-input-file --verify-diagnostics

// Tests that a call names an entry point the runtime defines.
func.func @unknown_entry() {
  // expected-error @+1 {{calls 'gelu', which runtime/include/infir2/runtime/ABI.def does not list}}
  infir2rt.call "gelu" [#infir2rt.buffer<scratch, 0, tensor<4xf32>>] attributes [] at "x"
  return
}

// -----

// Tests that a call has buffers.
func.func @no_buffers() {
  // expected-error @+1 {{expects at least one buffer}}
  infir2rt.call "fill" [] attributes [1.0] at "x"
  return
}

// -----

// Tests that a buffer's offset is not negative.
func.func @negative_offset() {
  // expected-error @+1 {{expects a non-negative offset, got -64}}
  infir2rt.call "fill" [#infir2rt.buffer<scratch, -64, tensor<4xf32>>] attributes [1.0] at "x"
  return
}

// -----

// Tests that a buffer holds a statically shaped tensor.
func.func @dynamic() {
  // expected-error @+1 {{expects a statically shaped tensor, got 'tensor<?xf32>'}}
  infir2rt.call "fill" [#infir2rt.buffer<scratch, 0, tensor<?xf32>>] attributes [1.0] at "x"
  return
}

// -----

// Tests that a buffer fits the runtime's descriptor.
func.func @rank() {
  // expected-error @+1 {{expects a rank of at most 7 (the runtime's descriptor), got 8}}
  infir2rt.call "fill" [#infir2rt.buffer<scratch, 0, tensor<1x1x1x1x1x1x1x1xf32>>] attributes [1.0] at "x"
  return
}

// -----

// Tests that the region is one of the two.
func.func @region() {
  // expected-error @+2 {{expected ::infir2::rtir::Region to be one of: state, scratch}}
  // expected-error @+1 {{failed to parse RT_BufferAttr parameter 'region'}}
  infir2rt.call "fill" [#infir2rt.buffer<heap, 0, tensor<4xf32>>] attributes [1.0] at "x"
  return
}

// -----

// Tests that a state slot has a name.
// expected-error @+2 {{expects a slot name}}
// expected-error @+1 {{failed to parse RT_PlanAttr parameter 'slots'}}
module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = 0, batch = 1, seq = 1, vocab = 1, zero1_world_size = 0, slots = [#infir2rt.slot<grad, "", 0, tensor<4xf32>>]>} {}

// -----

// Tests that only a parameter slot carries an initialization.
// expected-error @+2 {{expects an initialization only on a param slot, not on grad 'w'}}
// expected-error @+1 {{failed to parse RT_PlanAttr parameter 'slots'}}
module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = 0, batch = 1, seq = 1, vocab = 1, zero1_world_size = 0, slots = [#infir2rt.slot<grad, "w", 0, tensor<4xf32>, #infir2.param<"w", ones>>]>} {}

// -----

// Tests that the plan's sizes are not negative.
// expected-error @+1 {{expects a non-negative scratch_bytes, got -1}}
module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = -1, batch = 1, seq = 1, vocab = 1, zero1_world_size = 0, slots = []>} {}

// -----

// Tests that the batch geometry is positive.
// expected-error @+1 {{expects a positive vocab, got 0}}
module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = 0, batch = 1, seq = 1, vocab = 0, zero1_world_size = 0, slots = []>} {}

// -----

// Tests that the plan's slots are slots.
// expected-error @+1 {{expects slots to be #infir2rt.slot, got 1 : i64}}
module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = 0, batch = 1, seq = 1, vocab = 1, zero1_world_size = 0, slots = [1]>} {}

// -----

// Tests that every slot lies inside the state region.
// expected-error @+1 {{slot 'w' ends past the state region (64 bytes)}}
module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = 0, batch = 1, seq = 1, vocab = 1, zero1_world_size = 0, slots = [#infir2rt.slot<grad, "w", 32, tensor<16xf32>>]>} {}

// -----

// Tests that the plan sits on a module.
func.func @f() {
  // expected-error @+1 {{'func.return' op expects 'infir2rt.plan' on a module only}}
  return {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = 0, batch = 1, seq = 1, vocab = 1, zero1_world_size = 0, slots = []>}
}

// -----

// Tests that the manifest is a string.
// expected-error @+1 {{'builtin.module' op expects 'infir2rt.manifest' to be a string}}
module attributes {infir2rt.manifest = 3} {}

// -----

// Tests that a step's symbol is one the trainer calls.
// expected-error @+1 {{'func.func' op expects 'infir2rt.symbol' to be one of the steps a trainer calls: infir2_train_step, infir2_optimizer_step, infir2_eval_step}}
func.func @f() attributes {infir2rt.symbol = "train_step"} {
  return
}

// -----

// Tests that a step's arena size is not negative.
// expected-error @+1 {{'func.func' op expects 'infir2rt.scratch_bytes' to be a non-negative integer}}
func.func @f() attributes {infir2rt.scratch_bytes = -64} {
  return
}

// -----

// Tests that the dialect knows every attribute it is given.
// expected-error @+1 {{'func.func' op has an unknown infir2rt attribute 'infir2rt.arena'}}
func.func @f() attributes {infir2rt.arena = 0} {
  return
}

// -----

// Tests that an op has one buffer per result.
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'infir2.silu' op expects 'infir2rt.buffers' to be an array of 1 #infir2rt.buffer, one per result}}
  %y = infir2.silu %x {infir2rt.buffers = []} : tensor<4xf32>
  return
}

// -----

// Tests that a result's buffer has the result's type.
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'infir2.silu' op has a buffer of type 'tensor<8xf32>' for result #0 of type 'tensor<4xf32>'}}
  %y = infir2.silu %x {infir2rt.buffers = [#infir2rt.buffer<scratch, 0, tensor<8xf32>>]} : tensor<4xf32>
  return
}

// -----

// Tests that results are copied out to the state region only.
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'func.return' op copies a result out to #infir2rt.buffer<scratch, 0, tensor<4xf32>>, which is not in the state region}}
  return {infir2rt.copy_out = [#infir2rt.buffer<scratch, 0, tensor<4xf32>>]} %x : tensor<4xf32>
}

// -----

// Tests that an argument's buffer has the argument's type.
// expected-error @+1 {{'func.func' op expects argument #0's 'infir2rt.buffer' to be an #infir2rt.buffer of its type 'tensor<4xf32>'}}
func.func @f(%x: tensor<4xf32> {infir2rt.buffer = #infir2rt.buffer<state, 0, tensor<4xbf16>>}) {
  return
}

// -----

// Tests that the dialect knows every argument attribute it is given.
// expected-error @+1 {{'func.func' op has an unknown infir2rt argument attribute 'infir2rt.slot'}}
func.func @f(%x: tensor<4xf32> {infir2rt.slot = 0}) {
  return
}

// -----

// Tests that a buffer holds elements the runtime can store.
func.func @index_buffer() {
  // expected-error @+1 {{expects integer or floating-point elements, got 'tensor<4xindex>'}}
  infir2rt.call "fill" [#infir2rt.buffer<scratch, 0, tensor<4xindex>>] attributes [1.0] at "x"
  return
}

// -----

// Tests that a plan's slot holds elements the runtime can store.
// expected-error @+2 {{expects integer or floating-point elements, got 'tensor<4xindex>'}}
// expected-error @+1 {{failed to parse RT_PlanAttr parameter 'slots'}}
module attributes {infir2rt.plan = #infir2rt.plan<state_bytes = 64, scratch_bytes = 0, batch = 1, seq = 1, vocab = 1, zero1_world_size = 0, slots = [#infir2rt.slot<grad, "w", 0, tensor<4xindex>>]>} {}

// -----

// Tests that only a function with a body has placed arguments.
// expected-error @+1 {{'func.func' op expects 'infir2rt.buffer' on the arguments of a function with a body}}
func.func private @declared(tensor<4xf32> {infir2rt.buffer = #infir2rt.buffer<state, 0, tensor<4xf32>>})

// -----

// Tests that only a function's return copies results out.
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'infir2.silu' op expects 'infir2rt.copy_out' on a function's return only}}
  %y = infir2.silu %x {infir2rt.copy_out = [#infir2rt.buffer<state, 0, tensor<4xf32>>]} : tensor<4xf32>
  return
}

// -----

// Tests that a call passes the operands its entry point's signature
// declares (ABI.def): matmul with has_acc set takes the accumulator too.
func.func @missing_accumulator() {
  // expected-error @+1 {{does not match its entry point: matmul takes 4 operands (ABI.def), got 3}}
  infir2rt.call "matmul" [#infir2rt.buffer<scratch, 0, tensor<4x4xf32>>, #infir2rt.buffer<scratch, 64, tensor<4x4xf32>>, #infir2rt.buffer<scratch, 128, tensor<4x4xf32>>] attributes [0.0, 0.0, 1.0] at "x"
  return
}

// -----

// Tests that a call passes as many attribute words as its signature
// declares: scaled_matmul's blocks follow its operands' ranks, then has_acc.
func.func @missing_attribute() {
  // expected-error @+1 {{does not match its entry point: scaled_matmul takes 5 attribute words (ABI.def), got 4}}
  infir2rt.call "scaled_matmul" [#infir2rt.buffer<scratch, 0, tensor<4x128xf8E4M3FN>>, #infir2rt.buffer<scratch, 512, tensor<4x1xf32>>, #infir2rt.buffer<scratch, 576, tensor<8x128xf8E4M3FN>>, #infir2rt.buffer<scratch, 1600, tensor<8x1xf32>>, #infir2rt.buffer<scratch, 1664, tensor<4x8xf32>>] attributes [1.0, 128.0, 1.0, 128.0] at "x"
  return
}

// -----

// Tests a signature of repeated groups: quantize_dual takes five operands
// per tensor.
func.func @partial_group() {
  // expected-error @+1 {{does not match its entry point: quantize_dual takes a positive multiple of 5 operands (ABI.def), got 4}}
  infir2rt.call "quantize_dual" [#infir2rt.buffer<scratch, 0, tensor<4x128xf32>>, #infir2rt.buffer<scratch, 2048, tensor<4x128xf8E4M3FN>>, #infir2rt.buffer<scratch, 2560, tensor<4x1xf32>>, #infir2rt.buffer<scratch, 2624, tensor<128x4xf8E4M3FN>>] attributes [0.0, 1.0, 1.0, 128.0, 1.0, 128.0] at "x"
  return
}

// -----

// Tests a signature that reads the call's attributes: adamw_group's operand
// count follows its tensor and working-copy counts (here 1 and 0: 11).
func.func @group_count() {
  // expected-error @+1 {{does not match its entry point: adamw_group takes 11 operands (ABI.def), got 1}}
  infir2rt.call "adamw_group" [#infir2rt.buffer<scratch, 0, tensor<4xf32>>] attributes [0.9, 0.95, 1.0e-08, 1.0, 1.0, 0.1, 0.0] at "x"
  return
}

// -----

// Tests that each attribute word has the type ABI.def declares: a flag is
// 0 or 1.
func.func @flag_not_boolean() {
  // expected-error @+1 {{does not match its entry point: matmul's attribute 'has_acc' (word 2) is 0 or 1 (ABI.def), got 0.5}}
  infir2rt.call "matmul" [#infir2rt.buffer<scratch, 0, tensor<4x4xf32>>, #infir2rt.buffer<scratch, 64, tensor<4x4xf32>>, #infir2rt.buffer<scratch, 128, tensor<4x4xf32>>, #infir2rt.buffer<scratch, 192, tensor<4x4xf32>>] attributes [0.0, 0.0, 0.5] at "x"
  return
}

// -----

// Tests that an integer attribute holds an integer: attention's head count.
func.func @heads_not_integer() {
  // expected-error @+1 {{does not match its entry point: attention's attribute 'heads' (word 0) is an integer (ABI.def), got 2.5}}
  infir2rt.call "attention" [#infir2rt.buffer<scratch, 0, tensor<1x4x8xf32>>, #infir2rt.buffer<scratch, 128, tensor<1x4x8xf32>>, #infir2rt.buffer<scratch, 256, tensor<1x4x8xf32>>, #infir2rt.buffer<scratch, 384, tensor<1x4x8xf32>>] attributes [2.5, 1.0, 4.0, 0.5, 1.0, 0.0] at "x"
  return
}

// -----

// Tests that an array of integers holds integers: a quantization's block.
func.func @block_not_integer() {
  // expected-error @+1 {{does not match its entry point: quantize's attribute 'block' (word 3) is an integer (ABI.def), got 127.5}}
  infir2rt.call "quantize" [#infir2rt.buffer<scratch, 0, tensor<4x128xf32>>, #infir2rt.buffer<scratch, 2048, tensor<4x128xf8E4M3FN>>, #infir2rt.buffer<scratch, 2560, tensor<4x1xf32>>] attributes [0.0, 1.0, 1.0, 127.5] at "x"
  return
}

// -----

// Tests a call too short for its signature's expressions: scaled_matmul's
// blocks follow operand 2's rank, which a 2-operand call lacks; the
// signature refuses it (no word is read at a negative position).
func.func @too_few_for_ranks() {
  // expected-error @+1 {{does not match its entry point: scaled_matmul takes a number its operands do not give attribute words (ABI.def), got 1}}
  infir2rt.call "scaled_matmul" [#infir2rt.buffer<scratch, 0, tensor<4x128xf8E4M3FN>>, #infir2rt.buffer<scratch, 512, tensor<4x1xf32>>] attributes [1.0] at "x"
  return
}

// -----

// Tests a count that is not an integer: adamw_group's tensor count.
func.func @count_not_integer() {
  // expected-error @+1 {{does not match its entry point: adamw_group takes a number its operands do not give attribute words (ABI.def), got 7}}
  infir2rt.call "adamw_group" [#infir2rt.buffer<scratch, 0, tensor<4xf32>>] attributes [0.9, 0.95, 1.0e-08, 1.0, 2.5, 0.1, 0.0] at "x"
  return
}
