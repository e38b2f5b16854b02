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
from compare_trainer_step import load  # noqa: E402
from qwen_forward_vs_torch import forward  # noqa: E402

cfg = json.load(open(sys.argv[1]))
dump, order, shapes = load(sys.argv[2])
max_loss, min_cos, max_rel = (float(x) for x in sys.argv[3:6])

params = [k for k in order if "." in k and not k.split(".")[0] in ("grad", "gradient", "input", "output")]
t = {}
for name in params:
    t[name] = torch.tensor(dump[name], dtype=torch.float64).reshape(shapes[name]).requires_grad_(True)
# forward() reads the batch as arg<n_params + i>: ids, targets, mask, positions.
for i, role in enumerate(["input_ids", "targets", "loss_mask", "positions"]):
    value = torch.tensor(dump["input." + role], dtype=torch.float64).reshape(shapes["input." + role])
    t[f"arg{len(params) + i}"] = value
loss = forward(cfg, t)
loss.backward()

ok = True
loss_t = float(dump["output.loss"][0])
rel = abs(loss_t - float(loss)) / abs(float(loss))
print(f"loss: trainer {loss_t:.9g}, pytorch float64 {float(loss):.12g}, relative difference "
      f"{rel:.3g} (bound {max_loss:g})")
ok &= rel <= max_loss
worst_cos, worst_rel = 1.0, 0.0
for name in params:
    ref = t[name].grad.reshape(-1).numpy()
    g = dump["gradient." + name]
    norm = (ref @ ref) ** 0.5
    if norm == 0:
        continue
    cos = float(g @ ref / ((g @ g) ** 0.5 * norm))
    err = float(((g - ref) @ (g - ref)) ** 0.5 / norm)
    if cos < min_cos or err > max_rel:
        print(f"  {name}: cosine {cos:.6f}, relative error {err:.3g}  <- out of bounds")
        ok = False
    worst_cos, worst_rel = min(worst_cos, cos), max(worst_rel, err)
print(f"gradients of {len(params)} parameters: worst cosine {worst_cos:.6f} (bound {min_cos}), "
      f"worst relative L2 error {worst_rel:.3g} (bound {max_rel:g})")
print("OK" if ok else "FAIL: the compiled trainer disagrees with PyTorch")
sys.exit(0 if ok else 1)
