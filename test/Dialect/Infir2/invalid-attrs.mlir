// RUN: infir2-opt %s --split-input-file --verify-diagnostics

// Tests that only infir2.param is a known argument attribute.
// expected-error @+1 {{unknown argument attribute 'infir2.weight' on argument #0}}
func.func @unknown_arg_attr(%w: tensor<8xf32> {infir2.weight}) {
  return
}

// -----

// Tests that infir2.param holds a #infir2.param.
// expected-error @+1 {{'infir2.param' on argument #0 must be a #infir2.param, got "w"}}
func.func @param_not_attr(%w: tensor<8xf32> {infir2.param = "w"}) {
  return
}

// -----

// Tests that parameters are float tensors.
// expected-error @+1 {{parameter 'ids' (argument #0) must be a statically shaped tensor of bf16, f16, f32 or f64, got 'tensor<8xi32>'}}
func.func @param_type(%w: tensor<8xi32> {infir2.param = #infir2.param<"ids", zeros>}) {
  return
}

// -----

// Tests that parameter names are unique, as checkpoint names must be.
// expected-error @+1 {{parameter name 'model.norm.weight' of argument #1 is already used by argument #0}}
func.func @param_duplicate(%a: tensor<8xf32> {infir2.param = #infir2.param<"model.norm.weight", ones>},
                           %b: tensor<8xf32> {infir2.param = #infir2.param<"model.norm.weight", ones>}) {
  return
}

// -----

// Tests that a normal initialization has a positive std.
// expected-error @+1 {{normal initialization of 'w' needs a positive, finite std, got 0}}
func.func @param_std(%w: tensor<8xf32> {infir2.param = #infir2.param<"w", normal(std = 0.0)>}) {
  return
}

// -----

// Tests that a parameter has a name.
// expected-error @+1 {{parameter name must not be empty}}
func.func @param_empty_name(%w: tensor<8xf32> {infir2.param = #infir2.param<"", ones>}) {
  return
}

// -----

// Tests that the initialization rule is one of the known ones.
// expected-error @+1 {{unknown initialization rule 'xavier' (expected zeros, ones or normal)}}
func.func @param_rule(%w: tensor<8xf32> {infir2.param = #infir2.param<"w", xavier>}) {
  return
}

// -----

// Tests that infir2 attributes are not allowed on function results.
// expected-error @+1 {{'infir2.param' is not allowed on result #0 (parameters are function arguments)}}
func.func private @param_on_result() -> (tensor<8xf32> {infir2.param = #infir2.param<"w", ones>})

// -----

// Tests that unknown infir2 attributes on operations are reported.
func.func @unknown_op_attr(%x: tensor<8xf32>) {
  // expected-error @+1 {{unknown attribute 'infir2.fp8' on 'infir2.silu'}}
  %0 = infir2.silu %x {infir2.fp8} : tensor<8xf32>
  return
}

// -----

// Tests that a gradient accumulator names its parameter.
// expected-error @+1 {{'infir2.grad_of' on argument #0 must name a parameter}}
func.func @grad_of_name(%acc: tensor<4xf32> {infir2.grad_of = 3 : i64}) {
  return
}

// -----

// Tests that gradient accumulators are FP32.
// expected-error @+1 {{gradient accumulator of 'w' (result #0) must be an f32 tensor, got 'tensor<4xbf16>'}}
func.func private @grad_of_type() -> (tensor<4xbf16> {infir2.grad_of = "w"})

// -----

// Tests that moments are FP32 or BF16 (optimizer-state=bf16), nothing else.
// expected-error @+1 {{second moment of 'w' (argument #0) must be an f32 or bf16 tensor, got 'tensor<4xf16>'}}
func.func private @moment_f16(tensor<4xf16> {infir2.moment2_of = "w"})

// -----

// Tests that master weights are FP32.
// expected-error @+1 {{master weight of 'w' (argument #0) must be an f32 tensor, got 'tensor<4xbf16>'}}
func.func private @master_bf16(tensor<4xbf16> {infir2.master_of = "w"})

// -----

// Tests that scalar inputs have a known role.
// expected-error @+1 {{'infir2.input' on argument #0 must be "learning_rate", "step" or "grad_scale"}}
func.func private @bad_role(tensor<f32> {infir2.input = "momentum"})

// -----

// Tests that a GEMM role is dgrad or wgrad.
func.func @gemm_role_value(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'infir2.gemm_role' must be "dgrad" or "wgrad"}}
  %0 = infir2.matmul %a, %a {infir2.gemm_role = "fprop"} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return
}

// -----

// Tests that a GEMM role sits on a GEMM.
func.func @gemm_role_op(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'infir2.gemm_role' is only meaningful on a GEMM}}
  %0 = infir2.silu %a {infir2.gemm_role = "dgrad"} : tensor<4x4xf32>
  return
}

// -----

// Tests that a GEMM's weight is named.
func.func @gemm_weight(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'infir2.gemm_weight' must name a parameter}}
  %0 = infir2.matmul %a, %a {infir2.gemm_weight = ""} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return
}

// -----

// Tests that the model's config is a JSON object.
// expected-error @+1 {{'infir2.model_config' must be a string holding a JSON object (the Hugging Face config.json)}}
module attributes {infir2.model_config = "[1, 2]"} {
}

// -----

// expected-error @+1 {{'infir2.model_config' must be a string holding a JSON object (the Hugging Face config.json)}}
module attributes {infir2.model_config = 42} {
}

// -----

// Tests that the model's config belongs on the module.
func.func @model_config_on_a_function() attributes {infir2.model_config = "{}"} {
  // expected-error @-1 {{'infir2.model_config' belongs on the module}}
  return
}

// -----

// Tests that an FP8 weight cache tensor says which part of which parameter
// it holds.
// expected-error @+1 {{'infir2.fp8_cache' on argument #0 must be "PARAM:data" or "PARAM:scale"}}
func.func @fp8_cache_without_part(%arg0: tensor<128x128xf8E4M3FN> {infir2.fp8_cache = "w"}) {
  return
}

// -----

// expected-error @+1 {{'infir2.fp8_cache' on result #0 must be "PARAM:data" or "PARAM:scale"}}
func.func @fp8_cache_not_a_string() -> (tensor<1x1xf32> {infir2.fp8_cache = 1 : i64}) {
  %0 = arith.constant dense<1.0> : tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

// -----

// Tests that cached codes are FP8 and cached scales f32 (or E8M0).
// expected-error @+1 {{FP8 weight cache 'w:data' (argument #0) must be a 2-D FP8 (f8E4M3FN or f8E5M2) tensor, got 'tensor<128x128xbf16>'}}
func.func @fp8_cache_data_not_fp8(%arg0: tensor<128x128xbf16> {infir2.fp8_cache = "w:data"}) {
  return
}

// -----

// expected-error @+1 {{FP8 weight cache 'w.t:scale' (argument #0) must be a 2-D f32 or f8E8M0FNU tensor, got 'tensor<2xf32>'}}
func.func @fp8_cache_scale_not_2d(%arg0: tensor<2xf32> {infir2.fp8_cache = "w.t:scale"}) {
  return
}
