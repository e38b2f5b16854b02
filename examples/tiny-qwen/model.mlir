// A tiny Qwen2.5-style decoder written by hand in the infir2 dialect: the
// forward pass and the loss of one training micro-batch.
//
//   vocab 256 (bytes)    hidden 256    layers 2    MLP 768 (SwiGLU)
//   attention: 4 query heads, 2 key/value heads (GQA), head_dim 64,
//              q/k/v bias, RoPE theta 1e6, causal within each segment
//   RMSNorm eps 1e-6     tied embeddings (the LM head reads embed_tokens)
//   micro-batch 4 x 128 tokens; 1,640,704 parameters in 26 tensors
//
// Every GEMM dimension is a multiple of 128 so that the FP8 recipe's 128x128
// weight blocks and 1x128 groups tile each operand. Parameters carry their
// Hugging Face names, so checkpoints interoperate.
//
// Check it with:  infir2-opt examples/tiny-qwen/model.mlir

// The Hugging Face config.json of this model (examples/tiny-qwen/config.json),
// which saved model folders carry.
module attributes {infir2.model_config = "{\"architectures\":[\"Qwen2ForCausalLM\"],\"hidden_act\":\"silu\",\"hidden_size\":256,\"initializer_range\":0.02,\"intermediate_size\":768,\"max_position_embeddings\":128,\"model_type\":\"qwen2\",\"num_attention_heads\":4,\"num_hidden_layers\":2,\"num_key_value_heads\":2,\"rms_norm_eps\":1e-06,\"rope_theta\":1000000.0,\"tie_word_embeddings\":true,\"use_sliding_window\":false,\"vocab_size\":256}"} {

func.func @forward(
    %embed: tensor<256x256xbf16> {infir2.param = #infir2.param<"model.embed_tokens.weight", normal(std = 0.02)>},
    %l0_ln1: tensor<256xbf16> {infir2.param = #infir2.param<"model.layers.0.input_layernorm.weight", ones>},
    %l0_wq: tensor<256x256xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.q_proj.weight", normal(std = 0.02)>},
    %l0_bq: tensor<256xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.q_proj.bias", zeros>},
    %l0_wk: tensor<128x256xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.k_proj.weight", normal(std = 0.02)>},
    %l0_bk: tensor<128xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.k_proj.bias", zeros>},
    %l0_wv: tensor<128x256xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.v_proj.weight", normal(std = 0.02)>},
    %l0_bv: tensor<128xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.v_proj.bias", zeros>},
    %l0_wo: tensor<256x256xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.o_proj.weight", normal(std = 0.02)>},
    %l0_ln2: tensor<256xbf16> {infir2.param = #infir2.param<"model.layers.0.post_attention_layernorm.weight", ones>},
    %l0_wg: tensor<768x256xbf16> {infir2.param = #infir2.param<"model.layers.0.mlp.gate_proj.weight", normal(std = 0.02)>},
    %l0_wu: tensor<768x256xbf16> {infir2.param = #infir2.param<"model.layers.0.mlp.up_proj.weight", normal(std = 0.02)>},
    %l0_wd: tensor<256x768xbf16> {infir2.param = #infir2.param<"model.layers.0.mlp.down_proj.weight", normal(std = 0.02)>},
    %l1_ln1: tensor<256xbf16> {infir2.param = #infir2.param<"model.layers.1.input_layernorm.weight", ones>},
    %l1_wq: tensor<256x256xbf16> {infir2.param = #infir2.param<"model.layers.1.self_attn.q_proj.weight", normal(std = 0.02)>},
    %l1_bq: tensor<256xbf16> {infir2.param = #infir2.param<"model.layers.1.self_attn.q_proj.bias", zeros>},
    %l1_wk: tensor<128x256xbf16> {infir2.param = #infir2.param<"model.layers.1.self_attn.k_proj.weight", normal(std = 0.02)>},
    %l1_bk: tensor<128xbf16> {infir2.param = #infir2.param<"model.layers.1.self_attn.k_proj.bias", zeros>},
    %l1_wv: tensor<128x256xbf16> {infir2.param = #infir2.param<"model.layers.1.self_attn.v_proj.weight", normal(std = 0.02)>},
    %l1_bv: tensor<128xbf16> {infir2.param = #infir2.param<"model.layers.1.self_attn.v_proj.bias", zeros>},
    %l1_wo: tensor<256x256xbf16> {infir2.param = #infir2.param<"model.layers.1.self_attn.o_proj.weight", normal(std = 0.02)>},
    %l1_ln2: tensor<256xbf16> {infir2.param = #infir2.param<"model.layers.1.post_attention_layernorm.weight", ones>},
    %l1_wg: tensor<768x256xbf16> {infir2.param = #infir2.param<"model.layers.1.mlp.gate_proj.weight", normal(std = 0.02)>},
    %l1_wu: tensor<768x256xbf16> {infir2.param = #infir2.param<"model.layers.1.mlp.up_proj.weight", normal(std = 0.02)>},
    %l1_wd: tensor<256x768xbf16> {infir2.param = #infir2.param<"model.layers.1.mlp.down_proj.weight", normal(std = 0.02)>},
    %final_norm: tensor<256xbf16> {infir2.param = #infir2.param<"model.norm.weight", ones>},
    // The micro-batch: input ids, next-token targets, loss mask, and each
    // token's position and segment (samples packed into one sequence restart
    // their positions and attend only within their segment).
    %ids: tensor<4x128xi32>,
    %targets: tensor<4x128xi32>,
    %loss_mask: tensor<4x128xf32>,
    %positions: tensor<4x128xi32>,
    %segments: tensor<4x128xi32>) -> tensor<f32> {
  %h0 = infir2.embedding %embed[%ids] : tensor<256x256xbf16>[tensor<4x128xi32>] -> tensor<4x128x256xbf16>

  // Decoder layer 0: attention block.
  %l0_x = infir2.rms_norm %h0, %l0_ln1 {epsilon = 1.0e-06 : f64} : tensor<4x128x256xbf16>, tensor<256xbf16>
  %l0_q0 = infir2.matmul %l0_x, %l0_wq {transpose_rhs} : tensor<4x128x256xbf16>, tensor<256x256xbf16> -> tensor<4x128x256xbf16>
  %l0_q1 = infir2.add %l0_q0, %l0_bq : tensor<4x128x256xbf16>, tensor<256xbf16>
  %l0_k0 = infir2.matmul %l0_x, %l0_wk {transpose_rhs} : tensor<4x128x256xbf16>, tensor<128x256xbf16> -> tensor<4x128x128xbf16>
  %l0_k1 = infir2.add %l0_k0, %l0_bk : tensor<4x128x128xbf16>, tensor<128xbf16>
  %l0_v0 = infir2.matmul %l0_x, %l0_wv {transpose_rhs} : tensor<4x128x256xbf16>, tensor<128x256xbf16> -> tensor<4x128x128xbf16>
  %l0_v = infir2.add %l0_v0, %l0_bv : tensor<4x128x128xbf16>, tensor<128xbf16>
  %l0_q = infir2.rope %l0_q1, %positions {head_dim = 64 : i64, theta = 1.0e+06 : f64} : tensor<4x128x256xbf16>, tensor<4x128xi32>
  %l0_k = infir2.rope %l0_k1, %positions {head_dim = 64 : i64, theta = 1.0e+06 : f64} : tensor<4x128x128xbf16>, tensor<4x128xi32>
  %l0_attn = infir2.attention %l0_q, %l0_k, %l0_v segments %segments {causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64}
      : tensor<4x128x256xbf16>, tensor<4x128x128xbf16>, tensor<4x128x128xbf16>, tensor<4x128xi32> -> tensor<4x128x256xbf16>
  %l0_o = infir2.matmul %l0_attn, %l0_wo {transpose_rhs} : tensor<4x128x256xbf16>, tensor<256x256xbf16> -> tensor<4x128x256xbf16>
  %l0_r = infir2.add %h0, %l0_o : tensor<4x128x256xbf16>, tensor<4x128x256xbf16>
  // Decoder layer 0: SwiGLU MLP block.
  %l0_y = infir2.rms_norm %l0_r, %l0_ln2 {epsilon = 1.0e-06 : f64} : tensor<4x128x256xbf16>, tensor<256xbf16>
  %l0_g = infir2.matmul %l0_y, %l0_wg {transpose_rhs} : tensor<4x128x256xbf16>, tensor<768x256xbf16> -> tensor<4x128x768xbf16>
  %l0_u = infir2.matmul %l0_y, %l0_wu {transpose_rhs} : tensor<4x128x256xbf16>, tensor<768x256xbf16> -> tensor<4x128x768xbf16>
  %l0_a = infir2.swiglu %l0_g, %l0_u : tensor<4x128x768xbf16>
  %l0_d = infir2.matmul %l0_a, %l0_wd {transpose_rhs} : tensor<4x128x768xbf16>, tensor<256x768xbf16> -> tensor<4x128x256xbf16>
  %h1 = infir2.add %l0_r, %l0_d : tensor<4x128x256xbf16>, tensor<4x128x256xbf16>

  // Decoder layer 1: attention block.
  %l1_x = infir2.rms_norm %h1, %l1_ln1 {epsilon = 1.0e-06 : f64} : tensor<4x128x256xbf16>, tensor<256xbf16>
  %l1_q0 = infir2.matmul %l1_x, %l1_wq {transpose_rhs} : tensor<4x128x256xbf16>, tensor<256x256xbf16> -> tensor<4x128x256xbf16>
  %l1_q1 = infir2.add %l1_q0, %l1_bq : tensor<4x128x256xbf16>, tensor<256xbf16>
  %l1_k0 = infir2.matmul %l1_x, %l1_wk {transpose_rhs} : tensor<4x128x256xbf16>, tensor<128x256xbf16> -> tensor<4x128x128xbf16>
  %l1_k1 = infir2.add %l1_k0, %l1_bk : tensor<4x128x128xbf16>, tensor<128xbf16>
  %l1_v0 = infir2.matmul %l1_x, %l1_wv {transpose_rhs} : tensor<4x128x256xbf16>, tensor<128x256xbf16> -> tensor<4x128x128xbf16>
  %l1_v = infir2.add %l1_v0, %l1_bv : tensor<4x128x128xbf16>, tensor<128xbf16>
  %l1_q = infir2.rope %l1_q1, %positions {head_dim = 64 : i64, theta = 1.0e+06 : f64} : tensor<4x128x256xbf16>, tensor<4x128xi32>
  %l1_k = infir2.rope %l1_k1, %positions {head_dim = 64 : i64, theta = 1.0e+06 : f64} : tensor<4x128x128xbf16>, tensor<4x128xi32>
  %l1_attn = infir2.attention %l1_q, %l1_k, %l1_v segments %segments {causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64}
      : tensor<4x128x256xbf16>, tensor<4x128x128xbf16>, tensor<4x128x128xbf16>, tensor<4x128xi32> -> tensor<4x128x256xbf16>
  %l1_o = infir2.matmul %l1_attn, %l1_wo {transpose_rhs} : tensor<4x128x256xbf16>, tensor<256x256xbf16> -> tensor<4x128x256xbf16>
  %l1_r = infir2.add %h1, %l1_o : tensor<4x128x256xbf16>, tensor<4x128x256xbf16>
  // Decoder layer 1: SwiGLU MLP block.
  %l1_y = infir2.rms_norm %l1_r, %l1_ln2 {epsilon = 1.0e-06 : f64} : tensor<4x128x256xbf16>, tensor<256xbf16>
  %l1_g = infir2.matmul %l1_y, %l1_wg {transpose_rhs} : tensor<4x128x256xbf16>, tensor<768x256xbf16> -> tensor<4x128x768xbf16>
  %l1_u = infir2.matmul %l1_y, %l1_wu {transpose_rhs} : tensor<4x128x256xbf16>, tensor<768x256xbf16> -> tensor<4x128x768xbf16>
  %l1_a = infir2.swiglu %l1_g, %l1_u : tensor<4x128x768xbf16>
  %l1_d = infir2.matmul %l1_a, %l1_wd {transpose_rhs} : tensor<4x128x768xbf16>, tensor<256x768xbf16> -> tensor<4x128x256xbf16>
  %h2 = infir2.add %l1_r, %l1_d : tensor<4x128x256xbf16>, tensor<4x128x256xbf16>

  // Final norm, tied LM head (logits in FP32) and the masked mean loss.
  %z = infir2.rms_norm %h2, %final_norm {epsilon = 1.0e-06 : f64} : tensor<4x128x256xbf16>, tensor<256xbf16>
  %logits = infir2.matmul %z, %embed {transpose_rhs} : tensor<4x128x256xbf16>, tensor<256x256xbf16> -> tensor<4x128x256xf32>
  %loss = infir2.cross_entropy %logits, %targets mask %loss_mask : tensor<4x128x256xf32>, tensor<4x128xi32>, tensor<4x128xf32> -> tensor<f32>
  return %loss : tensor<f32>
}

}
