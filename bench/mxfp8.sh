#!/usr/bin/env bash
# MXFP8 (granularity=mxfp8, docs/MXFP8.md) beside the InfiR2 recipe and BF16
# on the CPU backend, in one run: each trainer's tokens/s (median of ROUNDS
# rounds of STEPS steps, alternating) and its planned peak (--report-memory),
# with ratios to BF16. On the CPU every FP8 GEMM is an emulation (exact BF16
# products), so the speed says what the quantizers cost, not what Blackwell's
# tensor cores would give.
#
#   bash bench/mxfp8.sh [tiny|110m|0.5b] [ROUNDS] [STEPS]   (default 110m 3 6)
set -euo pipefail
which=${1:-110m} rounds=${2:-3} steps=${3:-6}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bench_model "$which" "$bin/infir2-import" "mxfp8.sh [tiny|110m|0.5b] [ROUNDS] [STEPS]"
recipes="bf16 fp8 mxfp8"
for r in $recipes; do
  case $r in
    bf16 | fp8) options=(--recipe=$r) ;;
    mxfp8) options=(--recipe=fp8 --recipe-options=granularity=mxfp8) ;;
  esac
  "$bin/infir2-compile" "$model" "${options[@]}" -o "$tmp/$r"
  "$bin/infir2-compile" "$model" "${options[@]}" --report-memory > "$tmp/$r.memory"
  awk '/^  peak \(training step\)/ {print $6}' "$tmp/$r.memory" > "$tmp/$r.peak"
done
for i in $(seq "$rounds"); do
  for r in $recipes; do
    "$tmp/$r" --device cpu --data "$data" --steps "$steps" --log-every 1 \
      --log-jsonl "$tmp/log.jsonl" > /dev/null 2>&1
    jsonl_tps "$tmp/log.jsonl" >> "$tmp/$r.tps"
  done
done
printf "%-8s %10s %8s %14s %8s\n" recipe "tok/s" "/bf16" "planned peak" "/bf16"
b=$(median < "$tmp/bf16.tps") bp=$(cat "$tmp/bf16.peak")
for r in $recipes; do
  t=$(median < "$tmp/$r.tps") p=$(cat "$tmp/$r.peak")
  printf "%-8s %10s %8.3f %10.3f GiB %8.3f\n" $r "$t" \
    "$(awk -v a="$t" -v b="$b" 'BEGIN {print a / b}')" \
    "$(awk -v p="$p" 'BEGIN {print p / 2^30}')" \
    "$(awk -v a="$p" -v b="$bp" 'BEGIN {print a / b}')"
done
