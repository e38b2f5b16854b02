// RUN: infir2-opt %s --split-input-file --convert-infir2rt-to-llvm --verify-diagnostics

// Tests that the module must carry the manifest.
// expected-error @+1 {{expects the 'infir2rt.manifest' module attribute (run --infir2-lower-to-runtime first)}}
module {
  func.func @infir2_train_step() {
    return
  }
}

// -----

// Tests that a step holds runtime calls only.
module attributes {infir2rt.manifest = "m"} {
  func.func @infir2_train_step() {
    // expected-error @+1 {{'arith.constant' op cannot be lowered to runtime calls}}
    %c = arith.constant 1.0 : f32
    return
  }
}

// -----

// Tests that a step has a body.
module attributes {infir2rt.manifest = "m"} {
  // expected-error @+1 {{'func.func' op expects a single-block function of infir2rt.call ops, without arguments or results}}
  func.func private @infir2_train_step()
}

// -----

// Tests that every buffer's element type is one the runtime stores.
module attributes {infir2rt.manifest = "m"} {
  func.func @infir2_train_step() {
    // expected-error @+1 {{'infir2rt.call' op has an element type the runtime does not know: 'i8'}}
    infir2rt.call "fill" [#infir2rt.buffer<scratch, 0, tensor<4xi8>>] attributes [1.0] at "x"
    return
  }
}

// -----

// Tests that a step takes nothing and returns nothing: the trainer calls it
// with the context alone.
module attributes {infir2rt.manifest = "m"} {
  // expected-error @+1 {{'func.func' op expects a single-block function of infir2rt.call ops, without arguments or results}}
  func.func @infir2_train_step(%a: i32) -> i32 {
    return %a : i32
  }
}
