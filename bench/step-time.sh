#!/usr/bin/env bash
# The step-time model (--report-step-time=cpu) against measured steps on this
# machine: calibrates it (infir2-gemm-peak --json), predicts the tokens/s of
# the bf16 and fp8 trainers of Qwen2.5-0.5B (1 x 256) and the ~110 M model
# (4 x 256), then measures them, ROUNDS times in turn, and prints predicted,
# measured and their ratio per round.
#
#   bash bench/step-time.sh [ROUNDS]        (default 2; docs/PERFORMANCE.md)
set -euo pipefail
rounds=${1:-2}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
"$bin/infir2-gemm-peak" --json > "$tmp/cpu.json"
echo "calibration: $(cat "$tmp/cpu.json")"
"$bin/infir2-import" --hf-config "$root/examples/hf-configs/qwen2.5-0.5b.json" \
  --seq-len 256 --micro-batch 1 -o "$tmp/0.5b.mlir"
"$bin/infir2-import" --hf-config "$root/examples/hf-configs/qwen-110m.json" \
  --seq-len 256 --micro-batch 4 -o "$tmp/110m.mlir"
models="0.5b 110m"
for m in $models; do
  for r in fp8 bf16; do
    "$bin/infir2-compile" "$tmp/$m.mlir" --recipe=$r -o "$tmp/$m-$r"
    "$bin/infir2-compile" "$tmp/$m.mlir" --recipe=$r --report-step-time=cpu \
      --calibration="$tmp/cpu.json" | sed -n 's/.*ms, \([0-9]*\) tokens\/s$/\1/p' \
      > "$tmp/$m-$r.predicted"
  done
done
steps() { [ "$1" = 0.5b ] && echo 4 || echo 6; }
for i in $(seq "$rounds"); do
  for m in $models; do
    for r in fp8 bf16; do
      "$tmp/$m-$r" --device cpu --data "$data" --steps "$(steps $m)" --log-every 1 \
        --log-jsonl "$tmp/log.jsonl" > /dev/null 2>&1
      jsonl_tps "$tmp/log.jsonl" >> "$tmp/$m-$r.measured"
    done
  done
done
printf "%-6s %-5s %10s %s\n" model recipe predicted "measured tok/s (measured / predicted), by round"
for m in $models; do
  for r in fp8 bf16; do
    p=$(cat "$tmp/$m-$r.predicted")
    printf "%-6s %-5s %10s" $m $r "$p"
    while read -r t; do
      printf " %s (%.2f)" "$t" "$(awk -v a="$t" -v b="$p" 'BEGIN {print a / b}')"
    done < "$tmp/$m-$r.measured"
    echo
  done
done
