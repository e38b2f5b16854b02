#!/usr/bin/env bash
# Two builds of InfiR2 side by side (say, main before and after a change):
# the tokens/s of the bf16 and fp8 trainers each compiles for the same
# model, alternating in every round, with the ratios new / old.
#
#   bash bench/trainer-compare.sh OLD_BUILD NEW_BUILD [tiny|110m|0.5b] [ROUNDS] [STEPS]
#   e.g. git worktree add /tmp/old <commit> && cmake -S /tmp/old -B /tmp/old/build ... &&
#        bash bench/trainer-compare.sh /tmp/old/build build 110m 3 6
set -euo pipefail
old=$1 new=$2 which=${3:-110m} rounds=${4:-3} steps=${5:-6}
INFIR2_BENCH_NO_BUILD=1 source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bench_model "$which" "$new/bin/infir2-import" \
  "trainer-compare.sh OLD_BUILD NEW_BUILD [tiny|110m|0.5b] [ROUNDS] [STEPS]"
for side in old new; do
  dir=$old; [ "$side" = new ] && dir=$new
  for r in bf16 fp8; do
    "$dir/bin/infir2-compile" "$model" --recipe=$r -o "$tmp/$side-$r"
  done
done
tps() {
  "$tmp/$1" --device cpu --data "$data" --steps "$steps" \
    --log-every 1 --log-jsonl "$tmp/log.jsonl" >/dev/null 2>&1
  jsonl_tps "$tmp/log.jsonl"
}
for i in $(seq "$rounds"); do
  for t in old-bf16 new-bf16 old-fp8 new-fp8; do tps $t >> "$tmp/$t.tps"; done
done
printf "%-8s %10s %10s %8s\n" recipe "old tok/s" "new tok/s" "new/old"
for r in bf16 fp8; do
  o=$(median < "$tmp/old-$r.tps"); n=$(median < "$tmp/new-$r.tps")
  printf "%-8s %10s %10s %8.2f\n" $r "$o" "$n" "$(awk -v a="$n" -v b="$o" 'BEGIN {print a / b}')"
done
echo "(model $which, median of $rounds rounds of $steps steps, first step left out)"
