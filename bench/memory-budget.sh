#!/usr/bin/env bash
# The planned memory against the measured peak resident memory, with the
# loss in chunks and with activations recomputed under a budget, for both
# optimizer-state options: Qwen2.5-0.5B (1 x 256) and the ~110 M model
# (4 x 256), fp8 recipe, STEPS CPU steps each on the Brown corpus. For each
# variant: what the trainer planned, its kernel temporaries and its peak
# resident memory (the trainer's own "memory:" line), and the step's tokens/s.
#
#   bash bench/memory-budget.sh [STEPS]   (default 3; docs/PERFORMANCE.md)
set -euo pipefail
steps=${1:-3}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
run() { # NAME MODEL OPTIONS...
  local name=$1 model=$2
  shift 2
  "$bin/infir2-compile" "$model" --recipe=fp8 "$@" -o "$tmp/$name" 2> "$tmp/$name.err" ||
    { cat "$tmp/$name.err"; return 1; }
  local remark
  remark=$(sed -n 's/.*remark: //p' "$tmp/$name.err")
  "$tmp/$name" --device cpu --data "$data" --steps "$steps" --log-every 1 \
    --log-jsonl "$tmp/$name.jsonl" > "$tmp/$name.out" 2>&1
  echo "$name: $(sed -n 's/^trainer: memory: //p' "$tmp/$name.out")"
  echo "  $(jsonl_tps "$tmp/$name.jsonl") tok/s${remark:+; $remark}"
}
"$bin/infir2-import" --hf-config "$root/examples/hf-configs/qwen2.5-0.5b.json" \
  --seq-len 256 --micro-batch 1 -o "$tmp/q05.mlir"
"$bin/infir2-import" --hf-config "$root/examples/hf-configs/qwen-110m.json" \
  --seq-len 256 --micro-batch 4 -o "$tmp/110m.mlir"
for st in fp32 bf16; do
  o="optimizer-state=$st"
  run "q05-$st" "$tmp/q05.mlir" --recipe-options="$o"
  run "q05-$st-chunked" "$tmp/q05.mlir" --recipe-options="$o loss-chunk-tokens=64"
  run "q05-$st-budget" "$tmp/q05.mlir" --recipe-options="$o loss-chunk-tokens=64" \
    --memory-budget="$([ $st = fp32 ] && echo 9.15GiB || echo 7.31GiB)"
  run "110m-$st" "$tmp/110m.mlir" --recipe-options="$o"
  run "110m-$st-chunked" "$tmp/110m.mlir" --recipe-options="$o loss-chunk-tokens=256"
  run "110m-$st-budget" "$tmp/110m.mlir" --recipe-options="$o loss-chunk-tokens=256" \
    --memory-budget="$([ $st = fp32 ] && echo 2.06GiB || echo 1.65GiB)"
done
