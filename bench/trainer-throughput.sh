#!/usr/bin/env bash
# Trainer tokens/s, side by side: the compiled fp8 and bf16 trainers of the
# example model against the PyTorch CPU implementation of the same model,
# micro-batch and optimizer (bench/torch_trainer.py, FP32), all on 2 threads
# and the same byte-tokenized Brown corpus. ROUNDS rounds, each running the
# three one after another, so that machine noise hits all of them; the
# medians and their ratios are printed.
#
#   bash bench/trainer-throughput.sh [ROUNDS] [STEPS]   (default 3 40; build first)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${INFIR2_BUILD_DIR:-$root/build}/bin
rounds=${1:-3}
steps=${2:-40}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bash "$root/scripts/get-corpus.sh" "$root/build/data" >/dev/null
data=$root/build/data/brown-train.txt
model=$root/examples/tiny-qwen/model.mlir
for r in fp8 bf16; do
  "$bin/infir2-compile" "$model" --recipe=$r -o "$tmp/trainer-$r"
done

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# The trainer's throughput over logged intervals after the first (warm-up).
trainer_tps() {
  "$tmp/trainer-$1" --device cpu --data "$data" --steps "$steps" --log-every 10 --log-jsonl "$tmp/$1.jsonl" >/dev/null
  tail -n +2 "$tmp/$1.jsonl" | sed -E 's/.*"tokens_per_s": ?([0-9.e+-]+).*/\1/' |
    awk '{s += $1; n++} END {printf "%.0f\n", s / n}'
}
for i in $(seq "$rounds"); do
  /usr/bin/python3 "$root/bench/torch_trainer.py" "$root/examples/tiny-qwen/config.json" "$data" 4 128 "$steps" 2 |
    sed -E 's/.*: ([0-9]+) tok.*/\1/' >> "$tmp/torch"
  trainer_tps bf16 >> "$tmp/bf16"
  trainer_tps fp8 >> "$tmp/fp8"
done
t=$(median < "$tmp/torch"); b=$(median < "$tmp/bf16"); f=$(median < "$tmp/fp8")
printf "%-28s %10s %10s\n" "trainer (4 x 128 tokens/step)" "tok/s" "vs PyTorch"
printf "%-28s %10s %10s\n" "PyTorch FP32 (eager, 2 thr)" "$t" "1.00"
printf "%-28s %10s %10.2f\n" "infir2 bf16 recipe" "$b" "$(awk -v a="$b" -v t="$t" 'BEGIN {print a / t}')"
printf "%-28s %10s %10.2f\n" "infir2 fp8 recipe" "$f" "$(awk -v a="$f" -v t="$t" 'BEGIN {print a / t}')"
echo "(median of $rounds rounds of $steps steps; per round: $(paste -sd' ' "$tmp/torch") | $(paste -sd' ' "$tmp/bf16") | $(paste -sd' ' "$tmp/fp8"))"
