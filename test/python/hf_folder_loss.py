#!/usr/bin/python3
"""Checks a saved Hugging Face model folder by what it computes: rebuilds the
model from the folder alone (config.json and the weights, read by
hf_folder.read_folder), runs the independent float64 PyTorch forward
(qwen_forward_vs_torch.forward) on the batch of a trainer dump, and compares
with the trainer's loss on that batch.

Usage: hf_folder_loss.py CONFIG_OR_DIR DUMP.safetensors MAX_REL

CONFIG_OR_DIR: the folder, or its config.json. DUMP: `trainer --dump-step`;
only its batch (input.input_ids, input.targets, input.loss_mask,
input.positions, input.segments) and output.loss are read, never its
parameters, so the weights come from the folder alone. The dump's loss must
be the loss of the weights that were saved.

Also checked, as transformers' Qwen2ForCausalLM / LlamaForCausalLM would
need: config.json has architectures, model_type, hidden_size,
intermediate_size, num_hidden_layers, num_attention_heads,
num_key_value_heads, vocab_size, rms_norm_eps, rope_theta,
tie_word_embeddings, torch_dtype (or its newer name dtype),
max_position_embeddings, hidden_act; the weight names are exactly those the
model class declares for that config (Qwen2: q/k/v biases, no o bias; Llama:
biases on q/k/v/o when attention_bias, on the MLP when mlp_bias), with the
shapes the config implies; lm_head.weight is absent when tie_word_embeddings
(transformers' save drops it; then the head is the embedding), present
otherwise (else from_pretrained would initialise it randomly).

Tolerance MAX_REL: the trainer computes in BF16/FP32 from the same (saved)
weights while this side is float64, so the difference is the trainer's
rounding; the test picks the bound (see trainer_step_vs_torch's 1e-6 for an
FP32 trainer). Exit 1 on any violation.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_folder  # noqa: E402
from qwen_forward_vs_torch import forward  # noqa: E402

REQUIRED_KEYS = ["architectures", "model_type", "hidden_size", "intermediate_size",
                 "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                 "vocab_size", "rms_norm_eps", "rope_theta", "tie_word_embeddings",
                 "torch_dtype", "max_position_embeddings", "hidden_act"]
ARCH = {"qwen2": "Qwen2ForCausalLM", "llama": "LlamaForCausalLM"}
BATCH = ["input_ids", "targets", "loss_mask", "positions", "segments"]


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def check_config(cfg):
    """Returns a list of problems with config.json (empty when fine)."""
    problems = []
    for k in REQUIRED_KEYS:
        if k not in cfg and not (k == "torch_dtype" and "dtype" in cfg):
            problems.append(f"config.json lacks {k!r}")
    if problems:
        return problems
    mt = cfg["model_type"]
    if mt not in ARCH:
        return [f"model_type {mt!r} is neither qwen2 nor llama"]
    if cfg["architectures"] != [ARCH[mt]]:
        problems.append(f"architectures {cfg['architectures']!r}, expected [{ARCH[mt]!r}] "
                        f"for model_type {mt!r}")
    ints = ["hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "vocab_size", "max_position_embeddings"]
    for k in ints:
        if not (isinstance(cfg[k], int) and not isinstance(cfg[k], bool) and cfg[k] > 0):
            problems.append(f"{k} must be a positive integer, got {cfg[k]!r}")
    if problems:
        return problems
    if cfg["num_attention_heads"] % cfg["num_key_value_heads"]:
        problems.append("num_attention_heads is not a multiple of num_key_value_heads")
    if "head_dim" not in cfg and cfg["hidden_size"] % cfg["num_attention_heads"]:
        problems.append("hidden_size is not a multiple of num_attention_heads (and no head_dim)")
    if not isinstance(cfg["tie_word_embeddings"], bool):
        problems.append(f"tie_word_embeddings must be a boolean, got {cfg['tie_word_embeddings']!r}")
    dtype = cfg.get("torch_dtype", cfg.get("dtype"))
    if dtype not in ("bfloat16", "float16", "float32"):
        problems.append(f"torch_dtype {dtype!r} is not bfloat16, float16 or float32")
    if cfg["hidden_act"] != "silu":
        problems.append(f"hidden_act {cfg['hidden_act']!r}: the reference forward is SwiGLU (silu)")
    if not (isinstance(cfg["rms_norm_eps"], (int, float)) and cfg["rms_norm_eps"] > 0):
        problems.append(f"rms_norm_eps must be a positive number, got {cfg['rms_norm_eps']!r}")
    if not (isinstance(cfg["rope_theta"], (int, float)) and cfg["rope_theta"] > 0):
        problems.append(f"rope_theta must be a positive number, got {cfg['rope_theta']!r}")
    if cfg.get("rope_scaling"):
        problems.append(f"rope_scaling {cfg['rope_scaling']!r} is not supported by the reference forward")
    if cfg.get("use_sliding_window"):
        problems.append("use_sliding_window is not supported by the reference forward")
    if mt == "llama" and cfg.get("mlp_bias"):
        problems.append("mlp_bias is not supported by the reference forward")
    return problems


def expected_weights(cfg):
    """name -> shape, as transformers' model class declares them."""
    D, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or D // H
    qkv_bias = cfg["model_type"] == "qwen2" or bool(cfg.get("attention_bias"))
    o_bias = cfg["model_type"] == "llama" and bool(cfg.get("attention_bias"))
    w = {"model.embed_tokens.weight": [V, D], "model.norm.weight": [D]}
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = [V, D]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = [D]
        w[p + "post_attention_layernorm.weight"] = [D]
        for proj, rows in (("q_proj", H * hd), ("k_proj", KV * hd), ("v_proj", KV * hd)):
            w[p + f"self_attn.{proj}.weight"] = [rows, D]
            if qkv_bias:
                w[p + f"self_attn.{proj}.bias"] = [rows]
        w[p + "self_attn.o_proj.weight"] = [D, H * hd]
        if o_bias:
            w[p + "self_attn.o_proj.bias"] = [D]
        w[p + "mlp.gate_proj.weight"] = [I, D]
        w[p + "mlp.up_proj.weight"] = [I, D]
        w[p + "mlp.down_proj.weight"] = [D, I]
    return w


def check_weights(cfg, tensors):
    """Returns a list of problems with the weight names and shapes."""
    want = expected_weights(cfg)
    problems = []
    have = dict(tensors)
    if cfg["tie_word_embeddings"] and "lm_head.weight" in have:
        # Loadable (the tie overrides it) only if it is the embedding itself.
        if torch.equal(have["lm_head.weight"], have.get("model.embed_tokens.weight", torch.empty(0))):
            print("note: tie_word_embeddings, and lm_head.weight is stored too (equal to the embedding)")
            del have["lm_head.weight"]
        else:
            problems.append("tie_word_embeddings is true but lm_head.weight is stored and differs "
                            "from model.embed_tokens.weight (transformers would drop it)")
    for n in sorted(set(want) - set(have)):
        problems.append(f"missing weight {n} {want[n]}")
    for n in sorted(set(have) - set(want)):
        problems.append(f"unexpected weight {n} {list(have[n].shape)} (transformers would ignore it)")
    for n in sorted(set(want) & set(have)):
        if list(have[n].shape) != want[n]:
            problems.append(f"{n}: shape {list(have[n].shape)}, the config implies {want[n]}")
    return problems


def main():
    if len(sys.argv) != 4:
        print(__doc__.split("\n\n")[1])
        sys.exit(2)
    path, dump_path, max_rel = sys.argv[1], sys.argv[2], float(sys.argv[3])
    folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    try:
        cfg, weights, info = hf_folder.read_folder(folder)
    except hf_folder.FormatError as e:
        fail(e)
    print(hf_folder.summary(info))
    problems = check_config(cfg)
    if not problems:
        problems = check_weights(cfg, weights)
    if problems:
        for p in problems:
            print(f"  {p}")
        fail(f"{len(problems)} problem(s) with the folder for {cfg.get('architectures')}")
    dtype = cfg.get("torch_dtype", cfg.get("dtype"))
    stored = sorted({info["entries"][n].dtype for n in weights})
    if [hf_folder.TORCH_DTYPE_OF.get(d) for d in stored] != [dtype]:
        print(f"note: torch_dtype {dtype!r}, weights stored as {stored}")
    print(f"config and {len(weights)} weight names and shapes match {cfg['architectures'][0]}")

    try:
        dump = hf_folder.read_safetensors(dump_path).entries
    except hf_folder.FormatError as e:
        fail(e)
    for k in ("input.input_ids", "input.targets", "output.loss"):
        if k not in dump:
            fail(f"{dump_path} has no {k}")
    t = {n: w for n, w in weights.items() if n != "lm_head.weight" or not cfg["tie_word_embeddings"]}
    ids = torch.from_numpy(dump["input.input_ids"].to_float64())
    defaults = {"loss_mask": torch.ones_like(ids),
                "positions": torch.arange(ids.shape[-1], dtype=torch.float64).expand_as(ids).clone()}
    # forward() reads the batch as arg<n_params + i> in BATCH's order.
    n_params = len(t)
    for i, role in enumerate(BATCH):
        e = dump.get("input." + role)
        if e is None and role in defaults:
            print(f"note: the dump has no input.{role}; using "
                  f"{'ones' if role == 'loss_mask' else 'positions 0..S-1'}")
        value = torch.from_numpy(e.to_float64()) if e is not None else defaults.get(role)
        if value is not None:
            t[f"arg{n_params + i}"] = value
    v = int(ids.max())
    if v >= cfg["vocab_size"] or int(ids.min()) < 0:
        fail(f"input ids reach {v}, outside vocab_size {cfg['vocab_size']}")
    with torch.no_grad():
        expected = float(forward(cfg, t))
    loss = dump["output.loss"].to_float64().reshape(-1)
    if loss.size != 1:
        fail(f"output.loss has {loss.size} values")
    actual = float(loss[0])
    rel = abs(actual - expected) / abs(expected)
    print(f"trainer loss (dump)        {actual:.9g}")
    print(f"folder loss (PyTorch f64)  {expected:.9g}")
    print(f"relative difference {rel:.3g} (bound {max_rel:g})")
    if not rel <= max_rel:
        fail("the saved folder does not compute the trainer's loss")
    print("OK")


if __name__ == "__main__":
    main()
