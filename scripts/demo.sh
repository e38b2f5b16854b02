#!/usr/bin/env bash
# The main job: installs what is missing, builds, then takes the example tiny
# Qwen-style decoder through the compiler: verify, import the same model from
# its config.json, derive the training step (autodiff + AdamW), apply the FP8
# recipe and show every decision, compare the FP8 loss with the exact one,
# check every gradient against finite differences and the interpreter against
# PyTorch; then compile it into two trainers (fp8 and bf16 recipes), train
# both on the Brown corpus, and compare their held-out losses.
#
# INFIR2_DEMO_STEPS (default 300) sets the training steps of each run.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INFIR2_BUILD_DIR:-$root/build}
model=$root/examples/tiny-qwen/model.mlir

bash "$root/scripts/build.sh" --demo

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
echo "== operations of the forward pass"
"$build/bin/infir2-opt" "$model" --print-op-stats -o /dev/null 2>&1 | grep -E "infir2\.|func\."

echo
echo "== the training step: --infir2-autodiff --infir2-optimizer"
"$build/bin/infir2-opt" "$model" --infir2-autodiff --infir2-optimizer -o "$out/train.mlir"
for fn in train_step optimizer_step; do
  n=$(awk -v f="func.func @$fn(" 'index($0, f) {on=1; next} on && /^  }/ {on=0} on' "$out/train.mlir" | grep -c ' = ')
  echo "  @$fn: $n ops"
done
echo "  gradient ops in @train_step:"
grep -oE 'infir2\.[a-z_]+_grad' "$out/train.mlir" | sort | uniq -c | sed 's/^/  /'

echo
echo "== --fp8-recipe: the precision decision of every GEMM of the training step"
# (awk, not head, cuts the listing: head would end the pipe early, and
# pipefail would turn that into a failure.)
"$build/bin/infir2-opt" "$model" --fp8-recipe --infir2-fp8-report=to-stdout -o "$out/fp8.mlir" |
  awk '/@train_step/ {on = 1} /@optimizer_step|@forward/ {on = 0} on && n++ < 12' 
echo "  ..."
"$build/bin/infir2-opt" "$model" --fp8-recipe --infir2-fp8-report=to-stdout -o /dev/null |
  awk '/@train_step/ {on = 1} on && /(fprop|dgrad|wgrad): / {print}'
awk '/func.func @train_step\(/ {on = 1} on && /^  }/ {on = 0} on' "$out/fp8.mlir" > "$out/step.mlir"
echo "  casts in the step: $(grep -c 'fp8.quantize_dual ' "$out/step.mlir") quantize_dual (row- and" \
  "column-wise copy in one pass), $(grep -c 'fp8.quantize ' "$out/step.mlir" || true) single-layout quantize," \
  "$(grep -c 'fp8.fused ' "$out/step.mlir") fused into their norm or SwiGLU"

echo
echo "== the FP8 forward against the exact one (FP64 interpreter, same inputs)"
"$build/bin/infir2-opt" "$model" --infir2-assign-precision --infir2-insert-quantization --cse -o "$out/fwd-fp8.mlir"
"$build/bin/infir2-run" "$model" --seed 1 --perturb-init 0.1 > "$out/exact.txt"
"$build/bin/infir2-run" "$out/fwd-fp8.mlir" --seed 1 --perturb-init 0.1 > "$out/fp8.txt"
/usr/bin/python3 "$root/test/python/compare_results.py" "$out/exact.txt" "$out/fp8.txt" 0.03

echo
echo "== every gradient of a 2-layer model against finite differences (FP64 interpreter)"
"$build/bin/infir2-import" --hf-config "$root/examples/mini-qwen/config.json" --seq-len 6 \
  --micro-batch 2 -o "$out/mini.mlir"
"$build/bin/infir2-opt" "$out/mini.mlir" --infir2-autodiff -o "$out/mini-train.mlir"
"$build/bin/infir2-run" "$out/mini-train.mlir" --gradcheck --fresh-seed --perturb-init 0.3 |
  grep -E "seed|gradcheck"

echo
echo "== the interpreter's loss on the example against PyTorch (float64)"
"$build/bin/infir2-run" "$model" --seed 7 --perturb-init 0.1 --dump "$out/tiny.safetensors" >/dev/null
/usr/bin/python3 "$root/test/python/qwen_forward_vs_torch.py" "$root/examples/tiny-qwen/config.json" \
  "$out/tiny.safetensors"

echo
echo "== infir2-compile: the example into two trainer executables"
demo=$build/demo
rm -rf "$demo" && mkdir -p "$demo"
for r in fp8 bf16; do
  s=$(date +%s.%N)
  "$build/bin/infir2-compile" "$model" --recipe=$r -o "$demo/trainer-$r"
  e=$(date +%s.%N)
  printf "  --recipe=%s: %s (%.2f s)\n" "$r" "$(realpath --relative-to="$root" "$demo/trainer-$r")" \
    "$(awk -v s="$s" -v e="$e" 'BEGIN {print e - s}')"
done
"$build/bin/infir2-compile" "$model" --recipe=fp8 --report-memory | sed 's/^/  /'

echo
steps=${INFIR2_DEMO_STEPS:-300}
echo "== training both on the Brown corpus: $steps steps each, held-out loss every 50"
bash "$root/scripts/get-corpus.sh" "$build/data"
for r in fp8 bf16; do
  echo "-- $r recipe"
  "$demo/trainer-$r" --data "$build/data/brown-train.txt" \
    --eval-data "$build/data/brown-heldout.txt" --steps "$steps" --lr 3e-3 \
    --warmup 30 --schedule cosine --seed 1 --eval-every 50 --log-every 25 \
    --log-jsonl "$demo/$r.jsonl" --save "$demo/checkpoints-$r"
done

echo
echo "== FP8 against BF16"
/usr/bin/python3 "$root/scripts/plot-losses.py" "$demo/loss-curves.png" \
  "fp8=$demo/fp8.jsonl" "bf16=$demo/bf16.jsonl"
