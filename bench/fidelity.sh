#!/usr/bin/env bash
# The FP8 recipe's fidelity against BF16, over several seeds (issue "FP8
# numerics", item 3; docs/Fidelity.md): the example model (tiny-qwen, 1.6 M
# parameters, byte-level: what trains in minutes on 2 cores) trained STEPS
# steps on the Brown corpus with each recipe and each seed (the seed draws
# the initial weights and the data order), then evaluated on the whole
# held-out split (108,868 bytes: 212 batches of 4 x 128 tokens). Prints each
# seed's final held-out losses and the relative FP8 - BF16 gap, their mean
# and sample standard deviation, and plots every curve into OUT/curves.png.
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
for r in bf16 fp8; do
  "$bin/infir2-compile" "$root/examples/tiny-qwen/model.mlir" --recipe=$r -o "$tmp/trainer-$r"
done
for seed in $seeds; do
  for r in bf16 fp8; do
    "$tmp/trainer-$r" --device cpu --data "$data" --eval-data "$heldout" --steps "$steps" \
      --lr 3e-3 --warmup 30 --schedule cosine --seed "$seed" --log-every 25 \
      --eval-every "$steps" --eval-batches 212 --log-jsonl "$out/$r-seed$seed.jsonl" \
      > "$out/$r-seed$seed.log" 2>&1
  done
done
plots=()
for seed in $seeds; do
  plots+=("fp8-seed$seed=$out/fp8-seed$seed.jsonl" "bf16-seed$seed=$out/bf16-seed$seed.jsonl")
done
/usr/bin/python3 "$root/scripts/plot-losses.py" "$out/curves.png" "${plots[@]}" > /dev/null
/usr/bin/python3 - "$out" $seeds <<'PY'
import json, statistics, sys
out, seeds = sys.argv[1], sys.argv[2:]
def final(path):
    rows = [json.loads(l) for l in open(path)]
    return [r["eval_loss"] for r in rows if "eval_loss" in r][-1]
gaps = []
for s in seeds:
    b, f = final(f"{out}/bf16-seed{s}.jsonl"), final(f"{out}/fp8-seed{s}.jsonl")
    gaps.append((f - b) / b)
    print(f"seed {s}: held-out loss bf16 {b:.4f}, fp8 {f:.4f}, gap {100 * gaps[-1]:+.2f}%")
mean = statistics.mean(gaps)
sd = statistics.stdev(gaps) if len(gaps) > 1 else float("nan")
print(f"FP8 - BF16 held-out gap over {len(gaps)} seeds: {100 * mean:+.2f}% "
      f"+- {100 * sd:.2f}% (mean +- sample standard deviation)")
PY
echo "curves: $out/curves.png"
