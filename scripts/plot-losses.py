#!/usr/bin/python3
"""Plots the loss curves of trainer runs (their --log-jsonl files) into one
PNG, and prints each run's final held-out loss and the relative gap of the
first run's to the second's.

Usage: plot-losses.py OUT.png LABEL=RUN.jsonl LABEL=RUN.jsonl ...
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

out, runs = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
fig, ax = plt.subplots(figsize=(7, 4.2))
finals = []
for label, path in runs:
    rows = [json.loads(line) for line in open(path)]
    ax.plot([r["step"] for r in rows], [r["loss"] for r in rows], label=f"{label} train")
    evals = [r for r in rows if "eval_loss" in r]
    if evals:
        ax.plot([r["step"] for r in evals], [r["eval_loss"] for r in evals], "o--",
                label=f"{label} held-out")
        finals.append((label, evals[-1]["eval_loss"]))
ax.set_xlabel("optimizer step")
ax.set_ylabel("cross-entropy (nats per byte)")
ax.set_title("InfiR2 trainers on the Brown corpus (byte-level tiny Qwen)")
ax.grid(alpha=0.3)
ax.legend()
fig.tight_layout()
fig.savefig(out, dpi=110)
for label, loss in finals:
    print(f"  final held-out loss, {label}: {loss:.4f}")
if len(finals) >= 2:
    (a, la), (b, lb) = finals[0], finals[1]
    print(f"  relative gap, {a} vs {b}: {100 * (la - lb) / lb:+.2f}%")
print(f"  loss curves: {out}")
