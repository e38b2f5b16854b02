#!/usr/bin/python3
"""The fidelity study's summary (bench/fidelity.sh): for each stage that ran
(pre-training, and SFT when OUT holds its logs), each seed's final held-out
loss per recipe and its relative gap to BF16, the gaps' mean and sample
standard deviation, each other FP8 recipe's gap less fp8's paired by seed,
and a plot of each recipe's training loss averaged over the seeds with its
held-out mean +- sd (OUT/curves.png, OUT/sft-curves.png).

Usage: fidelity_report.py OUT "RECIPES" SEED...
"""
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STAGES = [("", "pre-training", "curves.png", "Brown corpus", 100),
          ("-sft", "SFT", "sft-curves.png", "Brown dialogues, assistant-only loss", 0)]


def runs(out, recipe, seeds, suffix):
    return [[json.loads(l) for l in open(f"{out}/{recipe}-seed{s}{suffix}.jsonl")]
            for s in seeds]


def final(run):
    return [r["eval_loss"] for r in run if "eval_loss" in r][-1]


def plot(out, recipes, seeds, suffix, name, png, data, start):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for i, r in enumerate(recipes):
        rs = runs(out, r, seeds, suffix)
        logged = [x["step"] for x in rs[0] if "loss" in x]
        steps = [t for t in logged if t >= start] or logged  # short runs: all
        losses = [{x["step"]: x["loss"] for x in run if "loss" in x} for run in rs]
        line, = ax.plot(steps, [statistics.mean(l[t] for l in losses) for t in steps],
                        label=f"{r} train (mean of {len(seeds)} seeds)")
        held = [final(run) for run in rs]
        ax.errorbar([steps[-1] + (steps[-1] - steps[0]) / 60 * (i + 1)],
                    [statistics.mean(held)],
                    yerr=[statistics.stdev(held) if len(held) > 1 else 0], fmt="o",
                    color=line.get_color(), capsize=3, label=f"{r} held-out")
    ax.set_xlabel(f"optimizer step ({data})")
    ax.set_ylabel("cross-entropy (nats per byte)")
    ax.set_title(f"{name}: FP8 recipes against BF16 (tiny Qwen)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(f"{out}/{png}", dpi=110)
    return f"{out}/{png}"


def summary(name, g):
    mean = statistics.mean(g)
    sd = statistics.stdev(g) if len(g) > 1 else float("nan")
    print(f"{name} held-out gap over {len(g)} seeds: {100 * mean:+.2f}% "
          f"+- {100 * sd:.2f}% (mean +- sample standard deviation)")


def main():
    out, recipes, seeds = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
    for suffix, name, png, data, start in STAGES:
        if not os.path.exists(f"{out}/bf16-seed{seeds[0]}{suffix}.jsonl"):
            continue
        print(f"== {name}")
        gaps = {r: [] for r in recipes if r != "bf16"}
        for s in seeds:
            b = final(runs(out, "bf16", [s], suffix)[0])
            line = f"seed {s}: held-out loss bf16 {b:.4f}"
            for r in gaps:
                f = final(runs(out, r, [s], suffix)[0])
                gaps[r].append((f - b) / b)
                line += f", {r} {f:.4f} (gap {100 * gaps[r][-1]:+.2f}%)"
            print(line)
        for r, g in gaps.items():
            summary(f"{r} - bf16", g)
        # Two FP8 recipes side by side: the same seeds, so the difference of
        # their gaps is paired (the seed's own noise cancels in part).
        if "fp8" in gaps:
            for r, g in gaps.items():
                if r != "fp8":
                    summary(f"{r} - fp8 (paired)",
                            [a - b for a, b in zip(g, gaps["fp8"])])
        print("curves:", plot(out, recipes, seeds, suffix, name, png, data, start))


if __name__ == "__main__":
    main()
