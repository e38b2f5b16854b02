#!/usr/bin/env bash
# What BF16 optimizer moments (optimizer-state=bf16) cost in fidelity and
# save in memory, on the ~110 M model (4 x 256, fp8 recipe): the planned
# peak with FP32 and BF16 moments, then SEEDS training runs of each on the
# Brown corpus (byte-level, STEPS steps, lr 3e-3, 30 warmup steps, cosine),
# each evaluated at the end on the whole held-out text (108 kB). Prints the
# held-out losses per seed and the BF16 - FP32 difference as mean +- sample
# standard deviation over the seeds.
#
#   bash bench/optimizer-state.sh [SEEDS] [STEPS]   (default 3 150; docs/PERFORMANCE.md)
set -euo pipefail
seeds=${1:-3}
steps=${2:-150}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
"$bin/infir2-import" --hf-config "$root/examples/hf-configs/qwen-110m.json" \
  --seq-len 256 --micro-batch 4 -o "$tmp/110m.mlir"
for st in fp32 bf16; do
  "$bin/infir2-compile" "$tmp/110m.mlir" --recipe=fp8 \
    --recipe-options="optimizer-state=$st" -o "$tmp/t-$st"
  echo "optimizer-state=$st: $("$bin/infir2-compile" "$tmp/110m.mlir" --recipe=fp8 \
    --recipe-options="optimizer-state=$st" --emit=plan --report-memory -o "$tmp/p.mlir" |
    sed -n -E 's/^ *(optimizer moments|peak \(training step\)) +([0-9.]+ GiB).*/\1 \2/p' |
    paste -sd ';' | sed 's/;/; /')"
done
heldout=$root/build/data/brown-heldout.txt
for seed in $(seq "$seeds"); do
  for st in fp32 bf16; do
    "$tmp/t-$st" --device cpu --data "$data" --eval-data "$heldout" \
      --steps "$steps" --lr 3e-3 --warmup 30 --schedule cosine --seed "$seed" \
      --eval-every "$steps" --eval-batches 0 --log-every "$steps" \
      --log-jsonl "$tmp/$st-$seed.jsonl" > /dev/null 2>&1
    sed -n 's/.*"eval_loss": *\([0-9.e+-]*\).*/\1/p' "$tmp/$st-$seed.jsonl" | tail -1 \
      > "$tmp/$st-$seed.loss"
  done
  echo "seed $seed: held-out loss fp32 moments $(cat "$tmp/fp32-$seed.loss")," \
    "bf16 moments $(cat "$tmp/bf16-$seed.loss")"
done
for seed in $(seq "$seeds"); do
  echo "$(cat "$tmp/fp32-$seed.loss") $(cat "$tmp/bf16-$seed.loss")"
done | awk '{f[NR] = $1; b[NR] = $2; d[NR] = $2 - $1; r[NR] = ($2 - $1) / $1}
  function stats(x, n,   i, m, s) { for (i = 1; i <= n; i++) m += x[i]; m /= n;
    for (i = 1; i <= n; i++) s += (x[i] - m) ^ 2;
    return sprintf("%.4f +- %.4f", m, n > 1 ? sqrt(s / (n - 1)) : 0) }
  END { print "fp32 moments: " stats(f, NR); print "bf16 moments: " stats(b, NR);
        print "bf16 - fp32:  " stats(d, NR) " (relative " stats(r, NR) ")" }'
