// One Qwen2-style decoder layer and its loss, small enough to read: hidden
// 256, 4 query heads and 2 key/value heads of 64, MLP 512, q/k/v bias,
// a tied LM head. Every dimension --infir2-tensor-parallel splits at size 2
// is a whole number of 128 when it must be (the FP8 blocks): q 256 -> 128,
// MLP 512 -> 256; k and v (128 -> 64) are not, so the tests that shard
// them pass fp8-block=0.
func.func @forward(
    %embed: tensor<64x256xbf16> {infir2.param = #infir2.param<"model.embed_tokens.weight", normal(std = 0.02)>},
    %ln1: tensor<256xbf16> {infir2.param = #infir2.param<"model.layers.0.input_layernorm.weight", ones>},
    %wq: tensor<256x256xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.q_proj.weight", normal(std = 0.02)>},
    %bq: tensor<256xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.q_proj.bias", zeros>},
    %wk: tensor<128x256xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.k_proj.weight", normal(std = 0.02)>},
    %bk: tensor<128xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.k_proj.bias", zeros>},
    %wv: tensor<128x256xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.v_proj.weight", normal(std = 0.02)>},
    %bv: tensor<128xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.v_proj.bias", zeros>},
    %wo: tensor<256x256xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.o_proj.weight", normal(std = 0.02)>},
    %ln2: tensor<256xbf16> {infir2.param = #infir2.param<"model.layers.0.post_attention_layernorm.weight", ones>},
    %wg: tensor<512x256xbf16> {infir2.param = #infir2.param<"model.layers.0.mlp.gate_proj.weight", normal(std = 0.02)>},
    %wu: tensor<512x256xbf16> {infir2.param = #infir2.param<"model.layers.0.mlp.up_proj.weight", normal(std = 0.02)>},
    %wd: tensor<256x512xbf16> {infir2.param = #infir2.param<"model.layers.0.mlp.down_proj.weight", normal(std = 0.02)>},
    %lnf: tensor<256xbf16> {infir2.param = #infir2.param<"model.norm.weight", ones>},
    %ids: tensor<2x8xi32>, %targets: tensor<2x8xi32>, %positions: tensor<2x8xi32>) -> tensor<f32> {
  %h0 = infir2.embedding %embed[%ids] : tensor<64x256xbf16>[tensor<2x8xi32>] -> tensor<2x8x256xbf16>
  %x = infir2.rms_norm %h0, %ln1 {epsilon = 1.0e-06 : f64} : tensor<2x8x256xbf16>, tensor<256xbf16>
  %q0 = infir2.matmul %x, %wq {transpose_rhs} : tensor<2x8x256xbf16>, tensor<256x256xbf16> -> tensor<2x8x256xbf16>
  %q1 = infir2.add %q0, %bq : tensor<2x8x256xbf16>, tensor<256xbf16>
  %k0 = infir2.matmul %x, %wk {transpose_rhs} : tensor<2x8x256xbf16>, tensor<128x256xbf16> -> tensor<2x8x128xbf16>
  %k1 = infir2.add %k0, %bk : tensor<2x8x128xbf16>, tensor<128xbf16>
  %v0 = infir2.matmul %x, %wv {transpose_rhs} : tensor<2x8x256xbf16>, tensor<128x256xbf16> -> tensor<2x8x128xbf16>
  %v = infir2.add %v0, %bv : tensor<2x8x128xbf16>, tensor<128xbf16>
  %q = infir2.rope %q1, %positions {head_dim = 64 : i64, theta = 1.0e+06 : f64} : tensor<2x8x256xbf16>, tensor<2x8xi32>
  %k = infir2.rope %k1, %positions {head_dim = 64 : i64, theta = 1.0e+06 : f64} : tensor<2x8x128xbf16>, tensor<2x8xi32>
  %attn = infir2.attention %q, %k, %v {causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64}
      : tensor<2x8x256xbf16>, tensor<2x8x128xbf16>, tensor<2x8x128xbf16> -> tensor<2x8x256xbf16>
  %o = infir2.matmul %attn, %wo {transpose_rhs} : tensor<2x8x256xbf16>, tensor<256x256xbf16> -> tensor<2x8x256xbf16>
  %r = infir2.add %h0, %o : tensor<2x8x256xbf16>, tensor<2x8x256xbf16>
  %y = infir2.rms_norm %r, %ln2 {epsilon = 1.0e-06 : f64} : tensor<2x8x256xbf16>, tensor<256xbf16>
  %g = infir2.matmul %y, %wg {transpose_rhs} : tensor<2x8x256xbf16>, tensor<512x256xbf16> -> tensor<2x8x512xbf16>
  %u = infir2.matmul %y, %wu {transpose_rhs} : tensor<2x8x256xbf16>, tensor<512x256xbf16> -> tensor<2x8x512xbf16>
  %a = infir2.swiglu %g, %u : tensor<2x8x512xbf16>
  %d = infir2.matmul %a, %wd {transpose_rhs} : tensor<2x8x512xbf16>, tensor<256x512xbf16> -> tensor<2x8x256xbf16>
  %h1 = infir2.add %r, %d : tensor<2x8x256xbf16>, tensor<2x8x256xbf16>
  %f = infir2.rms_norm %h1, %lnf {epsilon = 1.0e-06 : f64} : tensor<2x8x256xbf16>, tensor<256xbf16>
  %logits = infir2.matmul %f, %embed {transpose_rhs} : tensor<2x8x256xbf16>, tensor<64x256xbf16> -> tensor<2x8x64xf32>
  %loss = infir2.cross_entropy %logits, %targets : tensor<2x8x64xf32>, tensor<2x8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
