#!/usr/bin/python3
"""Checks the reference interpreter's loss against an independent PyTorch
implementation of the Qwen2 / Llama forward pass.

Usage: qwen_forward_vs_torch.py CONFIG.json DUMP.safetensors

DUMP is what `infir2-run --dump` wrote: every input (parameters under their
Hugging Face names, then arg<N> for ids, targets, loss mask, positions) and
result0, the interpreter's loss. This script rebuilds the model in float64
from the Hugging Face semantics (RMSNorm, rotate-half RoPE, repeat_kv GQA,
causal softmax attention, SwiGLU MLP, masked mean cross-entropy) and compares.

Tolerance: both sides compute in float64; they differ only in summation
order and in the libm behind exp/log/sin/cos, each a few ulp, so the relative
loss difference must be below 1e-10 (observed ~1e-15).
"""
import json
import struct
import sys

import numpy as np
import torch

RTOL = 1e-10


def load_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    header.pop("__metadata__", None)
    base = 8 + n
    out = {}
    for name, info in header.items():
        assert info["dtype"] == "F64", name
        begin, end = info["data_offsets"]
        arr = np.frombuffer(blob[base + begin : base + end], dtype="<f8")
        out[name] = torch.from_numpy(arr.reshape(info["shape"]).copy())
    return out


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope(x, positions, head_dim, theta):
    # x: [B, H, S, hd]; positions: [S] or [B, S]
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    freqs = positions[..., None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    if emb.dim() == 3:  # per sequence: [B, 1, S, hd], broadcast over heads
        emb = emb[:, None]
    return x * emb.cos() + rotate_half(x) * emb.sin()


def forward(cfg, t):
    """The masked mean loss of the batch in t's arg<n_params + i> entries."""
    n_params = len([k for k in t if not k.startswith("arg") and not k.startswith("result")])
    ids, targets, mask, positions = (t[f"arg{n_params + i}"] for i in range(4))
    segments = t.get(f"arg{n_params + 4}")
    logits = forward_logits(cfg, t, ids.long(), positions, segments)
    per_token = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.long().reshape(-1), reduction="none")
    w = mask.reshape(-1)
    return (per_token * w).sum() / w.sum()


def forward_logits(cfg, t, ids, positions, segments=None):
    """The logits [B, S, V] of token ids [B, S] at positions [B, S]."""
    D = cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads", H)
    hd = cfg.get("head_dim", D // H)
    eps = cfg["rms_norm_eps"]
    theta = cfg.get("rope_theta", 10000.0)
    L = cfg["num_hidden_layers"]
    B, S = ids.shape
    # Segment ids (packed samples), when the model takes them: query s sees
    # key j <= s of its own segment only.
    if segments is None:
        segments = torch.zeros(B, S, dtype=torch.float64)
    allowed = torch.ones(S, S, dtype=torch.bool).tril()[None] & (
        segments[:, :, None] == segments[:, None, :])
    bias = torch.zeros(B, 1, S, S, dtype=torch.float64).masked_fill(
        ~allowed[:, None], float("-inf"))

    h = t["model.embed_tokens.weight"][ids]
    for l in range(L):
        p = f"model.layers.{l}."
        x = rms_norm(h, t[p + "input_layernorm.weight"], eps)

        def proj(name):
            y = x @ t[p + f"self_attn.{name}.weight"].T
            bias = t.get(p + f"self_attn.{name}.bias")
            return y if bias is None else y + bias

        q = proj("q_proj").view(B, S, H, hd).transpose(1, 2)
        k = proj("k_proj").view(B, S, KV, hd).transpose(1, 2)
        v = proj("v_proj").view(B, S, KV, hd).transpose(1, 2)
        q, k = rope(q, positions, hd, theta), rope(k, positions, hd, theta)
        k = k.repeat_interleave(H // KV, dim=1)
        v = v.repeat_interleave(H // KV, dim=1)
        scores = q @ k.transpose(-1, -2) / hd ** 0.5 + bias
        o = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, S, H * hd)
        o = o @ t[p + "self_attn.o_proj.weight"].T
        if p + "self_attn.o_proj.bias" in t:
            o = o + t[p + "self_attn.o_proj.bias"]
        h = h + o
        y = rms_norm(h, t[p + "post_attention_layernorm.weight"], eps)
        g = y @ t[p + "mlp.gate_proj.weight"].T
        u = y @ t[p + "mlp.up_proj.weight"].T
        h = h + (torch.nn.functional.silu(g) * u) @ t[p + "mlp.down_proj.weight"].T
    z = rms_norm(h, t["model.norm.weight"], eps)
    head = t.get("lm_head.weight", t["model.embed_tokens.weight"])
    return z @ head.T


def main():
    cfg = json.load(open(sys.argv[1]))
    tensors = load_safetensors(sys.argv[2])
    expected = float(forward(cfg, tensors))
    actual = float(tensors["result0"])
    rel = abs(actual - expected) / abs(expected)
    print(f"interpreter loss {actual:.17g}")
    print(f"pytorch loss     {expected:.17g}")
    print(f"relative difference {rel:.3g} (tolerance {RTOL:g})")
    if not rel <= RTOL:
        print("FAIL: the interpreter disagrees with PyTorch")
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
