#!/usr/bin/env bash
# The main job: installs what is missing, builds, then parses and verifies the
# example tiny Qwen-style decoder and shows what it is made of.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INFIR2_BUILD_DIR:-$root/build}
model=$root/examples/tiny-qwen/model.mlir

bash "$root/scripts/build.sh"

echo
echo "== infir2-opt: parse and verify $(realpath --relative-to="$root" "$model")"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$build/bin/infir2-opt" "$model" -o "$out/roundtrip.mlir"
"$build/bin/infir2-opt" "$out/roundtrip.mlir" -o "$out/roundtrip2.mlir"
cmp -s "$out/roundtrip.mlir" "$out/roundtrip2.mlir" ||
  { echo "demo: printing is not a fixed point" >&2; exit 1; }
echo "verified; printing it back is a fixed point"

echo
echo "== trainable parameters"
"$build/bin/infir2-opt" "$model" --infir2-param-summary=to-stdout -o /dev/null

echo
echo "== infir2-import: the same model from its config.json"
"$build/bin/infir2-import" --hf-config "$root/examples/tiny-qwen/config.json" \
  --seq-len 128 --micro-batch 4 -o "$out/imported.mlir"
"$build/bin/infir2-opt" "$out/imported.mlir" -o "$out/imported2.mlir"
cmp -s "$out/imported2.mlir" "$out/roundtrip.mlir" ||
  { echo "demo: the imported model differs from the hand-written one" >&2; exit 1; }
echo "identical to the hand-written examples/tiny-qwen/model.mlir"
echo
echo "== infir2-import --summary on the public Qwen2.5-7B config"
"$build/bin/infir2-import" --hf-config "$root/examples/hf-configs/qwen2.5-7b.json" --summary

echo
echo "== operations"
"$build/bin/infir2-opt" "$model" --print-op-stats -o /dev/null
