#!/usr/bin/env python3
"""PyTorch as a user would train on a GPU, the baseline of bench/gpu/run.sh:
Hugging Face transformers' Qwen2ForCausalLM built from the same config.json
with random weights, FP32 master weights under BF16 autocast,
F.scaled_dot_product_attention ("sdpa"), fused AdamW (lr 1e-4, betas 0.9 /
0.95, weight decay 0.1, global-norm clipping at 1), the loss through the
model's labels; the model eager or through torch.compile. Random token ids.
Times each step with CUDA events after 3 warm-up steps; prints one JSON line:
tokens/s (of the median step time; every step's time too), peak GPU memory (summarize.py computes MFU for this
and our trainers with one formula).

Usage: torch_step.py CONFIG.json BATCH SEQ STEPS eager|compile [LAYERS]
(LAYERS overrides num_hidden_layers: the 7B-shaped slice.)"""
import json
import statistics
import sys

import torch
from transformers import AutoModelForCausalLM, Qwen2Config

cfg = json.load(open(sys.argv[1]))
B, S, steps, mode = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
if len(sys.argv) > 6:
    cfg["num_hidden_layers"] = int(sys.argv[6])
for key in ("torch_dtype", "dtype", "transformers_version", "architectures"):
    cfg.pop(key, None)
torch.manual_seed(0)
model = AutoModelForCausalLM.from_config(Qwen2Config(**cfg), attn_implementation="sdpa")
model = model.float().cuda().train()
params = sum(p.numel() for p in model.parameters())
L = cfg["num_hidden_layers"]
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
run = torch.compile(model) if mode == "compile" else model
ids = torch.randint(0, cfg["vocab_size"], (B, S), device="cuda")


def step():
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = run(input_ids=ids, labels=ids).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


for _ in range(3):
    step()
torch.cuda.synchronize()
torch.cuda.reset_peak_memory_stats()
times = []
for _ in range(steps):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    loss = step()
    stop.record()
    torch.cuda.synchronize()
    times.append(start.elapsed_time(stop) / 1000.0)
t = statistics.median(times)
print(json.dumps({
    "model": sys.argv[1].split("/")[-1], "mode": mode, "batch": B, "seq": S, "layers": L,
    "params": params, "step_s": round(t, 4), "tokens_per_s": round(B * S / t),
    "steps_s": [round(x, 4) for x in times],
    "peak_allocated_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
    "peak_reserved_gib": round(torch.cuda.max_memory_reserved() / 2**30, 2),
    "loss": round(float(loss), 3)}), flush=True)
