#!/usr/bin/python3
"""The PyTorch CPU baseline for the trainer benchmark: the same Qwen2-style
model as an HF config describes, the same micro-batch, AdamW with the same
hyper-parameters and global-norm clipping, trained on the same byte-tokenized
text, in FP32 (PyTorch's CPU default) or with CPU BF16 autocast (what a user
would try first for speed: BF16 GEMMs through oneDNN, FP32 weights). Prints
tokens/s over the timed steps.

Usage: torch_trainer.py CONFIG.json DATA.txt BATCH SEQ STEPS [THREADS [fp32|bf16-autocast]]
"""
import json
import sys
import time

import torch
import torch.nn.functional as F

cfg = json.load(open(sys.argv[1]))
data = open(sys.argv[2], "rb").read()
B, S, steps = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
torch.set_num_threads(int(sys.argv[6]) if len(sys.argv) > 6 else 2)
mode = sys.argv[7] if len(sys.argv) > 7 else "fp32"
assert mode in ("fp32", "bf16-autocast"), mode
torch.manual_seed(0)

D, H = cfg["hidden_size"], cfg["num_attention_heads"]
KV, L, V = cfg["num_key_value_heads"], cfg["num_hidden_layers"], cfg["vocab_size"]
I, hd, eps, theta = cfg["intermediate_size"], D // H, cfg["rms_norm_eps"], cfg["rope_theta"]


_masks = {}


def self_mask(n):
    if n not in _masks:
        _masks[n] = torch.full((n, n), float("-inf")).triu(1)
    return _masks[n]


class RMSNorm(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * self.weight


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = RMSNorm(D), RMSNorm(D)
        self.q = torch.nn.Linear(D, H * hd)
        self.k = torch.nn.Linear(D, KV * hd)
        self.v = torch.nn.Linear(D, KV * hd)
        self.o = torch.nn.Linear(H * hd, D, bias=False)
        self.gate = torch.nn.Linear(D, I, bias=False)
        self.up = torch.nn.Linear(D, I, bias=False)
        self.down = torch.nn.Linear(I, D, bias=False)

    def forward(self, h, cos, sin):
        x = self.ln1(h)
        q = self.q(x).view(B, S, H, hd).transpose(1, 2)
        k = self.k(x).view(B, S, KV, hd).transpose(1, 2)
        v = self.v(x).view(B, S, KV, hd).transpose(1, 2)
        rot = lambda t: torch.cat((-t[..., hd // 2:], t[..., : hd // 2]), -1)
        q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
        # Debian's PyTorch (1.13) has no fused scaled_dot_product_attention:
        # the eager GQA attention of HF's Qwen2 implementation.
        k = k.repeat_interleave(H // KV, dim=1)
        v = v.repeat_interleave(H // KV, dim=1)
        scores = q @ k.transpose(-1, -2) / hd ** 0.5 + self_mask(S)
        o = scores.softmax(-1) @ v
        h = h + self.o(o.transpose(1, 2).reshape(B, S, H * hd))
        y = self.ln2(h)
        return h + self.down(F.silu(self.gate(y)) * self.up(y))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(V, D)
        self.layers = torch.nn.ModuleList(Layer() for _ in range(L))
        self.norm = RMSNorm(D)
        # Hugging Face's Qwen2 default is an untied LM head.
        self.tied = cfg.get("tie_word_embeddings", False)
        if not self.tied:
            self.lm_head = torch.nn.Linear(D, V, bias=False)
        for p in self.parameters():
            if p.dim() == 2:
                torch.nn.init.normal_(p, std=0.02)
        inv = 1.0 / theta ** (torch.arange(0, hd, 2).float() / hd)
        f = torch.arange(S).float()[:, None] * inv[None]
        emb = torch.cat((f, f), -1)
        self.cos, self.sin = emb.cos(), emb.sin()

    def forward(self, ids, targets):
        h = self.embed(ids)
        for layer in self.layers:
            h = layer(h, self.cos, self.sin)
        head = self.embed.weight if self.tied else self.lm_head.weight
        logits = self.norm(h) @ head.T
        return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))


model = Model()
decay = [p for p in model.parameters() if p.dim() >= 2]
no_decay = [p for p in model.parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                         {"params": no_decay, "weight_decay": 0.0}],
                        lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
tokens = torch.tensor(list(data), dtype=torch.long)
pos, warmup = 0, 3
for step in range(warmup + steps):
    if step == warmup:
        start = time.perf_counter()
    rows = []
    for b in range(B):
        if pos + S + 1 > len(tokens):
            pos = 0
        rows.append(tokens[pos : pos + S + 1])
        pos += S
    batch = torch.stack(rows)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode != "fp32"):
        loss = model(batch[:, :-1], batch[:, 1:])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
elapsed = time.perf_counter() - start
print(f"pytorch {mode}: {steps * B * S / elapsed:.0f} tok/s (loss {loss.item():.4f})")
