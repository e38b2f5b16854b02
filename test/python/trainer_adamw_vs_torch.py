#!/usr/bin/python3
"""Checks a compiled trainer's optimizer, step by step, against
torch.optim.AdamW fed the same gradients.

Usage: trainer_adamw_vs_torch.py TRACE_DIR --steps N --lr PEAK --warmup W
           --decay D --min-lr-ratio R --grad-accum K --beta1 B1 --beta2 B2
           --eps E --weight-decay WD --grad-clip C [--moments bf16]

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

With --moments bf16 (a trainer compiled with optimizer-state=bf16) each
step is checked on its own: PyTorch starts every step from the trainer's
masters and moments after the previous one (so that a BF16 rounding that
went the other way on one side does not compound), runs torch.optim.AdamW
in FP32, and rounds its new moments to BF16 (torch's own round-to-nearest-
even conversion), which is the contract: the update is computed in FP32
from the stored moments, the new moments are stored rounded.

Tolerance (FP32 on both sides; sums and the clipping norm are ordered
differently): after every step each element must agree within
1e-5 relative + 1e-7 absolute for the masters and the first moment, and
1e-4 relative + 1e-12 absolute for the second moment (squares double the
relative error of a gradient, and v's entries span many magnitudes). The
learning rate must match the formula to 1e-6 relative, and the clipping
norm the exact norm (float64 sums here) to 1e-6 relative: PyTorch 1.13's own
float32 total norm is itself up to ~1e-5 off it, so it is not the reference
for the norm, though its clipping is used. Observed differences are printed.

With --moments bf16 the gradients are clipped by the coefficient of the
exact (FP64) norm, as the trainer computes it, not by torch's float32 norm.
The masters keep the FP32 bounds (the update uses the unrounded FP32 moments
on both sides). The stored moments may differ by one BF16 ulp of PyTorch's
value where the two sides' FP32 values, a few FP32 ulps of the summed terms
apart, straddle a rounding boundary: each moment within ulp(ref) +
2^-20 (|beta1 m| + |(1-beta1) g|) (for v: beta2 v and (1-beta2) g^2), g the
clipped, averaged gradient and m the moment the step started from. The
trace's moments must be exactly BF16, and such flips must be rare: at most
1e-3 of the moments may differ from PyTorch's at all (two FP32 values a few
FP32 ulps apart straddle a BF16 rounding boundary with a probability of
about 2^-14; a rounding other than to nearest even, e.g. truncation, would
differ in about half of them).
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
    ap.add_argument("--moments", choices=["fp32", "bf16"], default="fp32")
    a = ap.parse_args()
    bf16 = a.moments == "bf16"

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
        if bf16 and k > 1:  # start from the trainer's state after step k-1
            with torch.no_grad():
                for n in names:
                    params[n].copy_(prev["master." + n])
                    st = opt.state[params[n]]
                    st["exp_avg"].copy_(prev["exp_avg." + n])
                    st["exp_avg_sq"].copy_(prev["exp_avg_sq." + n])
        started = {n: (opt.state[params[n]]["exp_avg"].clone(),
                       opt.state[params[n]]["exp_avg_sq"].clone())
                   if params[n] in opt.state else (torch.zeros_like(params[n]),) * 2
                   for n in names} if bf16 else {}
        for n in names:
            params[n].grad = t["grad." + n] / a.grad_accum
        exact = float(np.sqrt(sum(float((params[n].grad.double() ** 2).sum()) for n in names)))
        if bf16:
            # Clipped by the exact norm's coefficient, as the trainer clips
            # (torch's float32 norm is up to ~1e-5 off, which would move
            # ~1e-3 of the moments across a BF16 rounding boundary).
            coef = min(1.0, a.grad_clip / (exact + 1e-6))
            with torch.no_grad():
                for n in names:
                    params[n].grad.mul_(coef)
        else:
            torch.nn.utils.clip_grad_norm_(list(params.values()), a.grad_clip)
        norm_err = abs(float(t["grad_norm"]) - exact) / exact
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        if bf16:  # the moments as stored: rounded to BF16
            with torch.no_grad():
                for n in names:
                    st = opt.state[params[n]]
                    for key in ("exp_avg", "exp_avg_sq"):
                        st[key].copy_(st[key].bfloat16().float())
        w = {"master": 0.0, "exp_avg": 0.0, "exp_avg_sq": 0.0}
        flips, moments = 0, 0
        with torch.no_grad():
            for n in names:
                p, st = params[n], opt.state[params[n]]
                w["master"] = max(w["master"], worst(t["master." + n], p, 1e-5, 1e-7))
                if not bf16:
                    w["exp_avg"] = max(w["exp_avg"], worst(t["exp_avg." + n], st["exp_avg"], 1e-5, 1e-7))
                    w["exp_avg_sq"] = max(w["exp_avg_sq"],
                                          worst(t["exp_avg_sq." + n], st["exp_avg_sq"], 1e-4, 1e-12))
                    continue
                for key in ("exp_avg.", "exp_avg_sq."):  # stored as BF16
                    assert torch.equal(t[key + n], t[key + n].bfloat16().float()), \
                        f"{key}{n} is not BF16 after step {k}"
                g = params[n].grad
                m0, v0 = started[n]
                terms = {"exp_avg": (a.beta1 * m0).abs() + ((1 - a.beta1) * g).abs(),
                         "exp_avg_sq": (a.beta2 * v0).abs() + (1 - a.beta2) * g * g}
                for key, scale in terms.items():
                    ref = st[key]
                    # One BF16 ulp of ref: |ref| in [2^(e-1), 2^e), 8 bits.
                    ulp = torch.ldexp(torch.ones_like(ref), torch.frexp(ref)[1] - 8)
                    bound = torch.where(ref == 0, torch.zeros_like(ref), ulp) \
                        + 2.0 ** -20 * scale + 1e-38
                    w[key] = max(w[key], float(((t[key + "." + n] - ref).abs() / bound).max()))
                    flips += int((t[key + "." + n] != ref).sum())
                    moments += ref.numel()
        prev = t
        step_ok = (lr_err <= 1e-6 and scale_err == 0 and norm_err <= 1e-6
                   and all(v <= 1 for v in w.values())
                   and flips <= 1e-3 * max(moments, 1))
        ok &= step_ok
        print(f"step {k}: lr {lr:.6g} (diff {lr_err:.2g}), grad-norm {exact:.6g} "
              f"({'clipped' if exact > a.grad_clip else 'not clipped'}, diff {norm_err:.2g}), "
              f"worst/bound master {w['master']:.3g} exp_avg {w['exp_avg']:.3g} "
              f"exp_avg_sq {w['exp_avg_sq']:.3g}"
              + (f", BF16 moments off by an ulp {flips}/{moments}" if bf16 else "")
              + f": {'ok' if step_ok else 'MISMATCH'}")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
