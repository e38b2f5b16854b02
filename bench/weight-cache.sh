#!/usr/bin/env bash
# The FP8 weight cache (--infir2-cache-fp8-weights) on the CPU: one build,
# the fp8 trainer compiled with the cache (the default) and without it
# (--recipe-options=cache-weights=0, the weights quantized in the step),
# alternating in every round, at --grad-accum 1 and 4. For each: the
# seconds per optimizer step (median over the rounds, steps after the
# first), and from INFIR2_PROFILE=1 the seconds per optimizer step in
# `quantize`, `quantize_dual` and `transpose` calls (without the cache the
# weights' quantize and transposes; with it, both layouts of each weight in
# one quantize_dual, beside the activations'), and the planned memory
# (--report-memory).
#
#   bash bench/weight-cache.sh [0.5b|110m] [ROUNDS] [STEPS]   (default 0.5b 2 4)
set -euo pipefail
which=${1:-0.5b} rounds=${2:-2} steps=${3:-4}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
case "$which" in
  0.5b) config=qwen2.5-0.5b.json seq=256 mb=1 ;;
  110m) config=qwen-110m.json seq=256 mb=4 ;;
  *) echo "usage: weight-cache.sh [0.5b|110m] [ROUNDS] [STEPS]" >&2; exit 2 ;;
esac
"$bin/infir2-import" --hf-config "$root/examples/hf-configs/$config" \
  --seq-len $seq --micro-batch $mb -o "$tmp/model.mlir"
for side in cached uncached; do
  opts=""; [ $side = uncached ] && opts="cache-weights=0"
  "$bin/infir2-compile" "$tmp/model.mlir" --recipe=fp8 --recipe-options="$opts" \
    -o "$tmp/$side"
  echo "$side: $("$bin/infir2-compile" "$tmp/model.mlir" --recipe=fp8 \
    --recipe-options="$opts" --report-memory | grep -E 'weight cache|peak|allocated' |
    sed -E 's/ +/ /g' | paste -sd';')"
done
printf "%-9s %5s %8s %14s %14s %15s\n" trainer accum "s/step" "quantize s/st" "dual s/st" \
  "transpose s/st"
for i in $(seq "$rounds"); do
  for accum in 1 4; do
    for side in cached uncached; do
      INFIR2_PROFILE=1 "$tmp/$side" --device cpu --data "$data" --steps "$steps" \
        --grad-accum $accum --log-every 1 --log-jsonl "$tmp/log.jsonl" \
        >/dev/null 2>"$tmp/err"
      grep '^profile:' "$tmp/err" | sed 's/^profile: *//' > "$tmp/profile" || true
      sec=$(tail -n +2 "$tmp/log.jsonl" |
            sed -E 's/.*"tokens_per_s": ?([0-9.e+-]+).*/\1/' |
            awk -v t=$((seq * mb * accum)) '{print t / $1}' | median)
      each() { awk -v e="$1" -v n="$steps" '$1 == e {printf "%.3f", $4 / n}' "$tmp/profile"; }
      printf "%-9s %5s %8.2f %14s %14s %15s\n" $side $accum "$sec" "$(each quantize)" \
        "$(each quantize_dual)" "$(each transpose)"
    done
  done
done
