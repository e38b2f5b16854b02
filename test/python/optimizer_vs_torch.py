#!/usr/bin/python3
"""Checks the optimizer step (through the reference interpreter) against
torch.optim.AdamW / torch.optim.SGD with torch.nn.utils.clip_grad_norm_.

Usage: optimizer_vs_torch.py DUMP.safetensors --optimizer adamw|sgd
           [--beta1 B1 --beta2 B2 --eps E] --weight-decay WD --max-grad-norm N [--decay-1d]

DUMP is `infir2-run --entry optimizer_step --dump` output: master.<p>,
grad.<p>, moment1.<p>, moment2.<p>, input.learning_rate, input.step,
input.grad_scale, then result<i> in the step's result order (new masters,
[new moment1, new moment2,] working copies, global norm).

Tolerance: both sides are float64 and follow the same formulas, so every
element must agree to 1e-12 relative (plus 1e-15 absolute).
"""
import argparse
import json
import struct

import numpy as np
import torch

RTOL, ATOL = 1e-12, 1e-15


def load(path):
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        arr = np.frombuffer(blob[8 + n + b : 8 + n + e], dtype="<f8")
        out[name] = (b, torch.from_numpy(arr.reshape(info["shape"]).copy()))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--optimizer", required=True)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.95)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--weight-decay", type=float, required=True)
    ap.add_argument("--max-grad-norm", type=float, required=True)
    ap.add_argument("--decay-1d", action="store_true")
    a = ap.parse_args()

    t = load(a.dump)
    # Parameters in argument order (the order of their data in the file).
    names = [k[len("master."):] for k, _ in sorted(
        ((k, v[0]) for k, v in t.items() if k.startswith("master.")), key=lambda kv: kv[1])]
    get = lambda k: t[k][1]
    lr, scale = float(get("input.learning_rate")), float(get("input.grad_scale"))
    params = [torch.nn.Parameter(get("master." + n).clone()) for n in names]
    for p, n in zip(params, names):
        p.grad = get("grad." + n) * scale
    norm = float(torch.nn.utils.clip_grad_norm_(params, a.max_grad_norm)) if a.max_grad_norm > 0 \
        else float(torch.sqrt(sum((p.grad ** 2).sum() for p in params)))
    decay = [p for p in params if p.ndim >= 2 or a.decay_1d]
    no_decay = [p for p in params if not (p.ndim >= 2 or a.decay_1d)]
    groups = [{"params": decay, "weight_decay": a.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    groups = [g for g in groups if g["params"]]
    if a.optimizer == "adamw":
        opt = torch.optim.AdamW(groups, lr=lr, betas=(a.beta1, a.beta2), eps=a.eps, foreach=False)
        step = float(get("input.step"))
        for p, n in zip(params, names):
            opt.state[p] = {"step": torch.tensor(step - 1.0, dtype=torch.float64),
                            "exp_avg": get("moment1." + n).clone(),
                            "exp_avg_sq": get("moment2." + n).clone()}
    else:
        opt = torch.optim.SGD(groups, lr=lr, foreach=False)
    opt.step()

    k = len(names)
    expected = [p.detach() for p in params]
    if a.optimizer == "adamw":
        expected += [opt.state[p]["exp_avg"] for p in params]
        expected += [opt.state[p]["exp_avg_sq"] for p in params]
    worst = 0.0
    for i, e in enumerate(expected):
        r = get(f"result{i}")
        err = ((r - e).abs() / (ATOL + RTOL * e.abs())).max().item()
        worst = max(worst, err)
    norm_idx = len(expected) + k  # skip the working copies
    norm_err = abs(float(get(f"result{norm_idx}")) - norm) / (ATOL + RTOL * norm)
    worst = max(worst, norm_err)
    print(f"{a.optimizer}: {k} parameters, lr {lr:.3g}, grad norm {norm:.6g}, "
          f"worst error {worst:.3g} of tolerance (rtol {RTOL:g})")
    if not worst <= 1.0:
        print("FAIL: the optimizer step disagrees with PyTorch")
        raise SystemExit(1)
    print("OK")


if __name__ == "__main__":
    main()
