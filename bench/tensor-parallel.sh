#!/usr/bin/env bash
# Tensor parallelism on this CPU: the ~110 M model (4 x 256 tokens), both
# recipes, trained STEPS steps on the Brown corpus unsharded (one process,
# OMP_NUM_THREADS=2) and at tensor-parallel 2, without and with sequence
# parallelism (mpirun -np 2, one thread a rank: the same two cores). For
# each: one rank's planned memory and measured peak resident memory (rank
# 0's "memory:" line), tokens/s, and the last step's loss; then one rank's
# planned peak of Qwen2.5-7B at 32k tokens (fp8) at tensor-parallel 1, 2
# and 4 (and 4 with sequence parallelism), at 2 with ZeRO-1 over 8
# data-parallel groups under --memory-budget 80GiB, and at 4 with ZeRO-1
# over 2 groups.
#
#   bash bench/tensor-parallel.sh [STEPS]   (default 5; docs/PERFORMANCE.md)
set -euo pipefail
steps=${1:-5}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
mpi=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
"$bin/infir2-import" --hf-config "$root/examples/hf-configs/qwen-110m.json" \
  --seq-len 256 --micro-batch 4 -o "$tmp/110m.mlir"
for recipe in bf16 fp8; do
  for tp in 1 2 2sp; do
    name="110m-$recipe-tp$tp"
    options="tensor-parallel=${tp%sp}"
    [ "$tp" = 2sp ] && options+=" sequence-parallel=true"
    "$bin/infir2-compile" "$tmp/110m.mlir" --recipe=$recipe \
      --recipe-options="$options" -o "$tmp/$name"
    if [ $tp = 1 ]; then
      OMP_NUM_THREADS=2 "$tmp/$name" --device cpu --data "$data" --steps "$steps" \
        --log-every 1 --log-jsonl "$tmp/$name.jsonl" > "$tmp/$name.out" 2>&1
    else
      OMP_NUM_THREADS=1 "${mpi[@]}" -np 2 "$tmp/$name" --device cpu --data "$data" \
        --steps "$steps" --log-every 1 --log-jsonl "$tmp/$name.jsonl" > "$tmp/$name.out" 2>&1
    fi
    echo "$name: $(sed -n 's/^trainer: memory: //p' "$tmp/$name.out")"
    echo "  $(jsonl_tps "$tmp/$name.jsonl") tok/s; last loss $(tail -1 "$tmp/$name.jsonl" |
      sed 's/.*"loss":\([0-9.]*\).*/\1/')"
  done
done
"$bin/infir2-import" --hf-config "$root/examples/hf-configs/qwen2.5-7b.json" \
  --seq-len 32768 --micro-batch 1 -o "$tmp/q7.mlir"
for tp in 1 2 4; do
  echo "qwen2.5-7b 32k fp8 tp$tp: $("$bin/infir2-compile" "$tmp/q7.mlir" --recipe=fp8 \
    --recipe-options="tensor-parallel=$tp" --report-memory | grep 'peak (training step)')"
done
echo "qwen2.5-7b 32k fp8 tp4 sequence-parallel: $("$bin/infir2-compile" "$tmp/q7.mlir" \
  --recipe=fp8 --recipe-options="tensor-parallel=4 sequence-parallel=true" --report-memory |
  grep 'peak (training step)')"
"$bin/infir2-compile" "$tmp/q7.mlir" --recipe=fp8 \
  --recipe-options="tensor-parallel=2 zero1=true world-size=8" --memory-budget=80GiB \
  --report-memory 2>&1 | grep -E 'remark|peak \(training step\)'
echo "qwen2.5-7b 32k fp8 tp4 x zero1 over 2: $("$bin/infir2-compile" "$tmp/q7.mlir" --recipe=fp8 \
  --recipe-options="tensor-parallel=4 zero1=true world-size=2" --report-memory |
  grep 'peak (training step)')"
