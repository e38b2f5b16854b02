#!/usr/bin/env bash
# Times the compiler on the public model configs: import alone; the training
# step (--infir2-autodiff --infir2-optimizer on the imported forward); and
# the whole --fp8-recipe (training step, precision decisions, quantization,
# CSE, verification) on the forward-only input. Each row is the median of N
# runs of a whole process (start-up, parse, passes, verifier, print).
#
#   bash bench/compile-time.sh [N]        (default N = 9; build first)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${INFIR2_BUILD_DIR:-$root/build}/bin
runs=${1:-9}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timeit() { # command... ; prints seconds of one run
  local s e
  s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N)
  awk -v s="$s" -v e="$e" 'BEGIN { printf "%.6f\n", e - s }'
}

printf "%-16s %8s %8s %12s %18s %14s\n" config layers ops "import (s)" "+autodiff+opt (s)" "fp8-recipe (s)"
for cfg in qwen2.5-0.5b qwen2.5-1.5b qwen2.5-7b llama-2-7b; do
  json=$root/examples/hf-configs/$cfg.json
  "$bin/infir2-import" --hf-config "$json" -o "$tmp/$cfg.mlir"
  layers=$(grep -o '"num_hidden_layers": [0-9]*' "$json" | grep -o '[0-9]*$')
  import=$(for i in $(seq "$runs"); do timeit "$bin/infir2-import" --hf-config "$json" -o "$tmp/x.mlir"; done | median)
  train=$(for i in $(seq "$runs"); do timeit "$bin/infir2-opt" "$tmp/$cfg.mlir" --infir2-autodiff --infir2-optimizer -o "$tmp/t.mlir"; done | median)
  ops=$(grep -c ' = ' "$tmp/t.mlir")
  fp8=$(for i in $(seq "$runs"); do timeit "$bin/infir2-opt" "$tmp/$cfg.mlir" --fp8-recipe -o "$tmp/f.mlir"; done | median)
  printf "%-16s %8s %8s %12.3f %18.3f %14.3f\n" "$cfg" "$layers" "$ops" "$import" "$train" "$fp8"
done
