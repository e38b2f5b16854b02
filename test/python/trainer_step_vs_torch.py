#!/usr/bin/python3
"""Checks a compiled trainer's first step (`trainer --dump-step`) against an
independent PyTorch float64 implementation of the same Qwen2/Llama model
(qwen_forward_vs_torch.forward), fed the same weights (the trainer's BF16
working values) and batch: the loss, and every parameter's gradient
(autograd) by cosine similarity and relative L2 error.

Usage: trainer_step_vs_torch.py CONFIG.json DUMP.safetensors
           MAX_LOSS_REL MIN_COSINE MAX_GRAD_REL
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from compare_trainer_step import grade, load  # noqa: E402
from qwen_forward_vs_torch import forward  # noqa: E402

cfg = json.load(open(sys.argv[1]))
dump, order, shapes = load(sys.argv[2])
max_loss, min_cos, max_rel = (float(x) for x in sys.argv[3:6])

params = [k for k in order if "." in k and not k.split(".")[0] in ("grad", "gradient", "input", "output")]
t = {}
for name in params:
    t[name] = torch.tensor(dump[name], dtype=torch.float64).reshape(shapes[name]).requires_grad_(True)
# forward() reads the batch as arg<n_params + i>: ids, targets, mask,
# positions, segments (when the model takes them).
for i, role in enumerate(["input_ids", "targets", "loss_mask", "positions", "segments"]):
    if "input." + role not in dump:
        continue
    value = torch.tensor(dump["input." + role], dtype=torch.float64).reshape(shapes["input." + role])
    t[f"arg{len(params) + i}"] = value
loss = forward(cfg, t)
loss.backward()

grads = [(n, dump["gradient." + n], t[n].grad.reshape(-1).numpy()) for n in params]
ok = grade(float(dump["output.loss"][0]), float(loss), "PyTorch float64", grads,
           max_loss, min_cos, max_rel)
sys.exit(0 if ok else 1)
