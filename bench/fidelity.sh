#!/usr/bin/env bash
# The FP8 recipe's fidelity against BF16, over several seeds (issue "FP8
# numerics", item 3; docs/Fidelity.md): the example model (tiny-qwen, 1.6 M
# parameters, byte-level: what trains in minutes on 2 cores) trained STEPS
# steps on the Brown corpus with each recipe and each seed (the seed draws
# the initial weights and the data order), then evaluated on the whole
# held-out split (108,868 bytes: 212 batches of 4 x 128 tokens). Prints each
# seed's final held-out losses and the relative gap of each FP8 recipe to
# BF16, their mean and sample standard deviation (and, paired by seed, each
# other FP8 recipe's gap less fp8's), and plots each recipe's curve (the mean
# over the seeds) into OUT/curves.png. The recipes: bf16, fp8 (the InfiR2
# recipe: 128x128 weight blocks, 1x128 groups) and mxfp8 (granularity=mxfp8:
# 1x32 blocks along K with E8M0 scales, docs/MXFP8.md); RECIPES="bf16 fp8"
# runs fewer, and mxfp8-floor is MXFP8 under the OCP specification's floor
# scale rule.
#
#   bash bench/fidelity.sh [STEPS] [SEEDS] [OUT]   (default 600, "1 2 3",
#                                                   build/fidelity)
set -euo pipefail
steps=${1:-600}
seeds=${2:-1 2 3}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
out=${3:-$root/build/fidelity}
mkdir -p "$out"
heldout=$root/build/data/brown-heldout.txt
recipes=${RECIPES:-bf16 fp8 mxfp8}
case " $recipes " in
  *" bf16 "*) ;;
  *) echo "fidelity.sh: RECIPES must include bf16, the baseline of every gap" >&2; exit 2 ;;
esac
for r in $recipes; do
  case $r in
    bf16 | fp8) options=(--recipe=$r) ;;
    mxfp8) options=(--recipe=fp8 --recipe-options=granularity=mxfp8) ;;
    mxfp8-floor) options=(--recipe=fp8 "--recipe-options=granularity=mxfp8 scales=floor") ;;
    *) echo "fidelity.sh: unknown recipe '$r' in RECIPES (bf16, fp8, mxfp8, mxfp8-floor)" >&2
       exit 2 ;;
  esac
  "$bin/infir2-compile" "$root/examples/tiny-qwen/model.mlir" "${options[@]}" -o "$tmp/trainer-$r"
done
for seed in $seeds; do
  for r in $recipes; do
    "$tmp/trainer-$r" --device cpu --data "$data" --eval-data "$heldout" --steps "$steps" \
      --lr 3e-3 --warmup 30 --schedule cosine --seed "$seed" --log-every 25 \
      --eval-every "$steps" --eval-batches 212 --log-jsonl "$out/$r-seed$seed.jsonl" \
      > "$out/$r-seed$seed.log" 2>&1
  done
done
/usr/bin/python3 - "$out" "$recipes" $seeds <<'PY'
import json, statistics, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
out, recipes, seeds = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
# The curves: each recipe's training loss averaged over the seeds (from
# the 100th step, where the recipes separate), and its final held-out loss
# as mean +- sample standard deviation.
fig, ax = plt.subplots(figsize=(7, 4.2))
for i, r in enumerate(recipes):
    runs = [[json.loads(l) for l in open(f"{out}/{r}-seed{s}.jsonl")] for s in seeds]
    steps = [x["step"] for x in runs[0] if "loss" in x and x["step"] >= 100]
    losses = [{x["step"]: x["loss"] for x in run if "loss" in x} for run in runs]
    line, = ax.plot(steps, [statistics.mean(l[t] for l in losses) for t in steps],
                    label=f"{r} train (mean of {len(seeds)} seeds)")
    held = [[x["eval_loss"] for x in run if "eval_loss" in x][-1] for run in runs]
    ax.errorbar([steps[-1] + 8 * (i + 1)], [statistics.mean(held)],
                yerr=[statistics.stdev(held) if len(held) > 1 else 0], fmt="o",
                color=line.get_color(), capsize=3, label=f"{r} held-out")
ax.set_xlabel("optimizer step")
ax.set_ylabel("cross-entropy (nats per byte)")
ax.set_title("FP8 recipes against BF16 (tiny Qwen, Brown corpus)")
ax.grid(alpha=0.3)
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(f"{out}/curves.png", dpi=110)
def final(path):
    rows = [json.loads(l) for l in open(path)]
    return [r["eval_loss"] for r in rows if "eval_loss" in r][-1]
gaps = {r: [] for r in recipes if r != "bf16"}
for s in seeds:
    b = final(f"{out}/bf16-seed{s}.jsonl")
    line = f"seed {s}: held-out loss bf16 {b:.4f}"
    for r in gaps:
        f = final(f"{out}/{r}-seed{s}.jsonl")
        gaps[r].append((f - b) / b)
        line += f", {r} {f:.4f} (gap {100 * gaps[r][-1]:+.2f}%)"
    print(line)
def summary(name, g):
    mean = statistics.mean(g)
    sd = statistics.stdev(g) if len(g) > 1 else float("nan")
    print(f"{name} held-out gap over {len(g)} seeds: {100 * mean:+.2f}% "
          f"+- {100 * sd:.2f}% (mean +- sample standard deviation)")
for r, g in gaps.items():
    summary(f"{r} - bf16", g)
# Two FP8 recipes side by side: the same seeds, so the difference of their
# gaps is paired (the seed's own noise cancels in part).
if "fp8" in gaps:
    for r, g in gaps.items():
        if r != "fp8":
            summary(f"{r} - fp8 (paired)", [a - b for a, b in zip(g, gaps["fp8"])])
PY
echo "curves: $out/curves.png"
