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
