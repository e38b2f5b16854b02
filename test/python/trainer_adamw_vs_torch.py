#!/usr/bin/python3
"""Checks a compiled trainer's optimizer, step by step, against
torch.optim.AdamW fed the same gradients.

Usage: trainer_adamw_vs_torch.py TRACE_DIR --steps N --lr PEAK --warmup W
           --decay D --min-lr-ratio R --grad-accum K --beta1 B1 --beta2 B2
           --eps E --weight-decay WD --grad-clip C

TRACE_DIR is `trainer --trace-optimizer DIR --schedule wsd` output:
step-000000.safetensors holds the FP32 masters and moments the first update
starts from; step-k.safetensors holds grad.<p> (the gradients summed over
the K micro-batches, as the optimizer step received them), lr, grad_scale,
grad_norm, and the masters (master.<p>) and moments (exp_avg.<p>,
exp_avg_sq.<p>) after update k.

PyTorch side, written from PyTorch's and the recipe's definitions, not from
the trainer's code: p.grad = grad / K (averaging over micro-batches), then
torch.nn.utils.clip_grad_norm_(all, C), then torch.optim.AdamW with weight
decay WD on matrices and none on 1-D tensors (norms, biases), at the WSD
learning rate: linear warmup peak*k/W for k <= W, peak until the last D
steps, then linear decay to peak*R at step N. PyTorch keeps its own state
from step 0 on: only the gradients come from the trainer.

Tolerance (FP32 on both sides; sums and the clipping norm are ordered
differently): after every step each element must agree within
1e-5 relative + 1e-7 absolute for the masters and the first moment, and
1e-4 relative + 1e-12 absolute for the second moment (squares double the
relative error of a gradient, and v's entries span many magnitudes). The
learning rate must match the formula to 1e-6 relative, and the clipping
norm the exact norm (float64 sums here) to 1e-6 relative: PyTorch 1.13's own
float32 total norm is itself up to ~1e-5 off it, so it is not the reference
for the norm, though its clipping is used. Observed differences are printed.
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_trainer_step import load  # noqa: E402


def wsd(k, a):
    floor = a.lr * a.min_lr_ratio
    if k <= a.warmup:
        return a.lr * k / max(a.warmup, 1)
    start = a.steps - a.decay
    if k <= start:
        return a.lr
    return a.lr + (floor - a.lr) * (k - start) / max(a.decay, 1)


def tensors(path):
    flat, _, shapes = load(path)
    return {n: torch.tensor(v.reshape(shapes[n]), dtype=torch.float32) for n, v in flat.items()}


def worst(ours, ref, rtol, atol):
    """The largest |ours - ref| / (atol + rtol |ref|): within bounds <= 1."""
    return float(((ours - ref).abs() / (atol + rtol * ref.abs())).max())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    for flag, kind in [("--steps", int), ("--warmup", int), ("--decay", int),
                       ("--grad-accum", int), ("--lr", float), ("--min-lr-ratio", float),
                       ("--beta1", float), ("--beta2", float), ("--eps", float),
                       ("--weight-decay", float), ("--grad-clip", float)]:
        ap.add_argument(flag, type=kind, required=True)
    a = ap.parse_args()

    start = tensors(os.path.join(a.trace, "step-000000.safetensors"))
    names = sorted(n[len("master."):] for n in start if n.startswith("master."))
    params = {n: start["master." + n].clone().requires_grad_(True) for n in names}
    assert all(float(start[k + n].abs().max()) == 0 for n in names
               for k in ("exp_avg.", "exp_avg_sq.")), "moments must start at zero"
    groups = [{"params": [params[n] for n in names if params[n].dim() >= 2],
               "weight_decay": a.weight_decay},
              {"params": [params[n] for n in names if params[n].dim() < 2],
               "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps)
    print(f"{len(names)} tensors, {sum(p.numel() for p in params.values())} values, "
          f"{a.steps} steps")

    ok = True
    for k in range(1, a.steps + 1):
        t = tensors(os.path.join(a.trace, f"step-{k:06d}.safetensors"))
        lr = wsd(k, a)
        lr_err = abs(float(t["lr"]) - lr) / lr
        scale_err = abs(float(t["grad_scale"]) - 1.0 / a.grad_accum)
        for n in names:
            params[n].grad = t["grad." + n] / a.grad_accum
        exact = float(np.sqrt(sum(float((params[n].grad.double() ** 2).sum()) for n in names)))
        torch.nn.utils.clip_grad_norm_(list(params.values()), a.grad_clip)
        norm_err = abs(float(t["grad_norm"]) - exact) / exact
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        w = {"master": 0.0, "exp_avg": 0.0, "exp_avg_sq": 0.0}
        with torch.no_grad():
            for n in names:
                p, st = params[n], opt.state[params[n]]
                w["master"] = max(w["master"], worst(t["master." + n], p, 1e-5, 1e-7))
                w["exp_avg"] = max(w["exp_avg"], worst(t["exp_avg." + n], st["exp_avg"], 1e-5, 1e-7))
                w["exp_avg_sq"] = max(w["exp_avg_sq"],
                                      worst(t["exp_avg_sq." + n], st["exp_avg_sq"], 1e-4, 1e-12))
        step_ok = (lr_err <= 1e-6 and scale_err == 0 and norm_err <= 1e-6
                   and all(v <= 1 for v in w.values()))
        ok &= step_ok
        print(f"step {k}: lr {lr:.6g} (diff {lr_err:.2g}), grad-norm {exact:.6g} "
              f"({'clipped' if exact > a.grad_clip else 'not clipped'}, diff {norm_err:.2g}), "
              f"worst/bound master {w['master']:.3g} exp_avg {w['exp_avg']:.3g} "
              f"exp_avg_sq {w['exp_avg_sq']:.3g}: {'ok' if step_ok else 'MISMATCH'}")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
