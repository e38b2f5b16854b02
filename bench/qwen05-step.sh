#!/usr/bin/env bash
# Qwen2.5-0.5B (examples/hf-configs/qwen2.5-0.5b.json) at sequence 256,
# micro-batch 1, on the CPU: for each recipe, the planned memory
# (--report-memory), the seconds from launch to the start of the first step
# and to its end, the seconds per step after it, and the peak resident
# memory (/usr/bin/time) against the plan. Random weights (no download):
# speed and memory do not depend on them.
#
#   bash bench/qwen05-step.sh [STEPS]   (default 4; builds first)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
steps=${1:-4}
"$bin/infir2-import" --hf-config "$root/examples/hf-configs/qwen2.5-0.5b.json" \
  --seq-len 256 --micro-batch 1 -o "$tmp/model.mlir"
printf "%-6s %12s %12s %12s %10s %12s %12s %8s\n" recipe "planned GiB" "to step 1" \
  "step 1 done" "s/step" "peak GiB" "kernel tmp" "vs plan"
for r in fp8 bf16; do
  "$bin/infir2-compile" "$tmp/model.mlir" --recipe=$r -o "$tmp/trainer-$r"
  planned=$("$bin/infir2-compile" "$tmp/model.mlir" --recipe=$r --report-memory |
            sed -n 's/.*allocated (state + arena) *\([0-9.]*\) GiB.*/\1/p')
  start=$(date +%s.%N)
  # Line-buffered, each line stamped with the seconds since launch.
  /usr/bin/time -f "peak_kb %M" stdbuf -oL -eL "$tmp/trainer-$r" --device cpu \
    --data "$data" --steps "$steps" --log-every 1 2>&1 |
    while IFS= read -r line; do
      printf "%.2f %s\n" "$(echo "$(date +%s.%N) - $start" | bc)" "$line"
    done > "$tmp/$r.log"
  first=$(grep -m1 ' training: ' "$tmp/$r.log" | cut -d' ' -f1)
  done1=$(grep -m1 ' step 1/' "$tmp/$r.log" | cut -d' ' -f1)
  last=$(grep " step $steps/" "$tmp/$r.log" | cut -d' ' -f1)
  per=$(awk -v a="$done1" -v b="$last" -v n="$steps" 'BEGIN {printf "%.2f", (b - a) / (n - 1)}')
  peak=$(sed -n 's/.*peak_kb \([0-9]*\).*/\1/p' "$tmp/$r.log" | awk '{printf "%.2f", $1 / 1048576}')
  tmpgib=$(sed -n 's/.*kernel temporaries \([0-9.]*\) GiB.*/\1/p' "$tmp/$r.log")
  printf "%-6s %12s %12s %12s %10s %12s %12s %7.1f%%\n" "$r" "$planned" "$first" "$done1" \
    "$per" "$peak" "$tmpgib" "$(awk -v p="$peak" -v q="$planned" 'BEGIN {print 100 * (p / q - 1)}')"
done
echo "(seconds from launch; s/step over steps 2..$steps; peak from /usr/bin/time," \
     "GiB = 2^30 bytes; kernel tmp: the CPU kernels' reused temporaries, outside the plan)"
