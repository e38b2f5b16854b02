#!/usr/bin/env bash
# How the compiled trainers of the ~110 M model (examples/hf-configs/
# qwen-110m.json) scale on the CPU: tokens/s against sequence length (256 to
# 2048, micro-batch 1, 2 threads), and against threads (1 and 2, sequence
# 256, micro-batch 4), for the bf16 and fp8 recipes. Each point is the mean
# tokens/s of the logged intervals after the first.
#
#   bash bench/trainer-scaling.sh [STEPS]   (default 4; builds first)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
steps=${1:-4}
config=$root/examples/hf-configs/qwen-110m.json
tps() { # TRAINER THREADS
  OMP_NUM_THREADS=$2 "$1" --device cpu --data "$data" \
    --steps "$steps" --log-every 1 --log-jsonl "$tmp/log.jsonl" >/dev/null 2>&1
  jsonl_tps "$tmp/log.jsonl"
}
build() { # SEQ BATCH RECIPE
  "$bin/infir2-import" --hf-config "$config" --seq-len "$1" --micro-batch "$2" -o "$tmp/m.mlir"
  "$bin/infir2-compile" "$tmp/m.mlir" --recipe="$3" -o "$tmp/t-$1-$2-$3"
  echo "$tmp/t-$1-$2-$3"
}
printf "%-28s %10s %10s\n" "sequence (micro-batch 1)" "bf16 tok/s" "fp8 tok/s"
for seq in 256 512 1024 2048; do
  printf "%-28s %10s %10s\n" "$seq" "$(tps "$(build $seq 1 bf16)" 2)" "$(tps "$(build $seq 1 fp8)" 2)"
done
printf "%-28s %10s %10s\n" "threads (4 x 256 tokens)" "bf16 tok/s" "fp8 tok/s"
for th in 1 2; do
  printf "%-28s %10s %10s\n" "$th" "$(tps "$(build 256 4 bf16)" $th)" "$(tps "$(build 256 4 fp8)" $th)"
done
