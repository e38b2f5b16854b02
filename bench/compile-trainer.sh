#!/usr/bin/env bash
# End-to-end infir2-compile time (parse, recipe pipeline, memory planning,
# lowering to the LLVM dialect, LLVM codegen to an object file, linking the
# trainer) on imported Qwen2.5 configs: 1.5B (28 layers), 7B (28 layers) and
# a Qwen2.5-72B-shaped one (80 layers), for both recipes. Median of N runs.
#
#   bash bench/compile-trainer.sh [N]     (default N = 3; build first)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${INFIR2_BUILD_DIR:-$root/build}/bin
runs=${1:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timeit() {
  local s e
  s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N)
  awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f\n", e - s }'
}
printf "%-22s %6s %12s %12s %12s\n" config layers "fp8 (s)" "bf16 (s)" "s per layer"
for cfg in qwen2.5-1.5b qwen2.5-7b qwen2.5-72b-shaped; do
  json=$root/examples/hf-configs/$cfg.json
  layers=$(grep -o '"num_hidden_layers": [0-9]*' "$json" | grep -o '[0-9]*$')
  "$bin/infir2-import" --hf-config "$json" --seq-len 4096 -o "$tmp/$cfg.mlir"
  f=$(for i in $(seq "$runs"); do timeit "$bin/infir2-compile" "$tmp/$cfg.mlir" --recipe=fp8 -o "$tmp/t"; done | median)
  b=$(for i in $(seq "$runs"); do timeit "$bin/infir2-compile" "$tmp/$cfg.mlir" --recipe=bf16 -o "$tmp/t"; done | median)
  printf "%-22s %6s %12s %12s %12.4f\n" "$cfg" "$layers" "$f" "$b" "$(awk -v f="$f" -v l="$layers" 'BEGIN {print f / l}')"
done
