#!/usr/bin/env bash
# Packs the GPU checks for a Hopper machine that has no MLIR: trainers
# compiled here, the CUDA kernel tests, the shared libraries they need beyond
# the C/C++ runtime and CUDA's own (compressed), the training text and the
# comparison scripts, with run.sh (scripts/gpu-bundle-run.sh) to run there.
#
#   bash scripts/gpu-bundle.sh [DIR]      (default build/gpu-bundle; builds first)
#   then, on the GPU machine:  bash DIR/run.sh [OUT]    (Python with torch there)
#
# run.sh runs InfiR2CudaTests, trainer-gpu.test's single-process parts (the
# GPU against the CPU, same binary), PyTorch's FP8 accumulation measurement,
# GPU speed at 110 M and Qwen2.5-0.5B, and compute-sanitizer if present;
# bench.sh (bench/gpu/run.sh) the benchmark against PyTorch.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/build/gpu-bundle}
bash "$root/scripts/build.sh" >/dev/null
bin=$root/build/bin
tests=$root/build/test/Unit/InfiR2CudaTests
[ -x "$tests" ] || { echo "gpu-bundle: no CUDA backend in this build (nvcc not found)" >&2; exit 1; }
bash "$root/scripts/get-corpus.sh" "$root/build/data" >/dev/null
rm -rf "$out" && mkdir -p "$out/lib" "$out/python"

# The trainers of trainer-gpu.test, and the two real-size models.
"$bin/infir2-import" --hf-config "$root/examples/tiny-qwen/config.json" --seq-len 128 \
  --micro-batch 4 --dtype f32 -o "$out/f32.mlir"
"$bin/infir2-compile" "$out/f32.mlir" --recipe=bf16 -o "$out/t32"
"$bin/infir2-compile" "$out/f32.mlir" --recipe=bf16 \
  --recipe-options="tensor-parallel=2 sequence-parallel=true" -o "$out/t32tp2"
"$bin/infir2-compile" "$root/examples/tiny-qwen/model.mlir" --recipe=fp8 -o "$out/t8"
for m in qwen-110m:4 qwen2.5-0.5b:1; do
  "$bin/infir2-import" --hf-config "$root/examples/hf-configs/${m%%:*}.json" --seq-len 256 \
    --micro-batch "${m##*:}" -o "$out/${m%%:*}.mlir"
  for r in bf16 fp8; do
    "$bin/infir2-compile" "$out/${m%%:*}.mlir" --recipe=$r -o "$out/${m%%:*}-$r"
  done
done
# The benchmark's trainers (bench/gpu/run.sh): its shapes, and Qwen2.5-7B's
# widths with 4 layers.
mkdir -p "$out/configs"
cp "$root/examples/hf-configs/qwen-110m.json" "$root/examples/hf-configs/qwen2.5-0.5b.json" \
  "$out/configs/"
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["num_hidden_layers"] = 4
json.dump(c, open(sys.argv[2], "w"), indent=2)' "$root/examples/hf-configs/qwen2.5-7b.json" \
  "$out/configs/qwen2.5-7b-4layers.json"
for m in qwen-110m:8:1024 qwen2.5-0.5b:8:2048 qwen2.5-7b-4layers:2:4096; do
  IFS=: read -r name b s <<< "$m"
  "$bin/infir2-import" --hf-config "$out/configs/$name.json" --seq-len "$s" \
    --micro-batch "$b" -o "$out/$name.mlir"
  for r in bf16 fp8; do
    "$bin/infir2-compile" "$out/$name.mlir" --recipe=$r -o "$out/bench-$name-$r"
    # What the step-time model predicts for them (bench.sh puts it beside
    # the measurements).
    for target in h100 h200; do
      "$bin/infir2-compile" "$out/$name.mlir" --recipe=$r --report-step-time=$target \
        > "$out/predicted-$name-$r-$target.txt"
    done
  done
  # The FP8 recipe with the cost model's decisions (cost-model=h100: the
  # H100 and H200 share the model's GEMM table).
  "$bin/infir2-compile" "$out/$name.mlir" --recipe=fp8 --recipe-options="cost-model=h100" \
    -o "$out/bench-$name-fp8cost"
  "$bin/infir2-compile" "$out/$name.mlir" --recipe=fp8 --recipe-options="cost-model=h100" \
    --report-step-time=h200 > "$out/predicted-$name-fp8cost-h200.txt"
done
rm -f "$out"/*.mlir
cp "$tests" "$bin/infir2-cuda-probe" "$bin/infir2-kernel-bench" "$out/"
cp "$root/README.md" "$root/build/data/brown-train.txt" "$out/"
cp "$root"/test/python/compare_trainer_step.py "$root"/test/python/compare_runs.py \
   "$root/bench/gpu-fp8-accumulation.py" "$root"/bench/gpu/*.py "$out/python/"
cp "$root/scripts/gpu-bundle-run.sh" "$out/run.sh"
cp "$root/bench/gpu/run.sh" "$out/bench.sh"

# Libraries: what ldd resolves outside glibc, the compiler runtime and CUDA
# (the GPU machine has its own CUDA 13, cuBLASLt and NCCL).
ldd "$out/t8" "$out/InfiR2CudaTests" | awk '/=> \//{print $3}' | sort -u |
  grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libgomp)\.so|cuda|nccl|cublas' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
tar cJf "$out/lib.tar.xz" -C "$out/lib" . && rm -rf "$out/lib"
# The executables, compressed (the device tool carries at most 64 MiB).
(cd "$out" && strip t32 t32tp2 t8 qwen-* bench-* infir2-* && find . -maxdepth 1 -type f -perm -u+x \
  ! -name '*.sh' -printf '%P\n' | tar cJf bin.tar.xz -T - --remove-files)
echo "gpu-bundle: $out ($(du -sh "$out" | cut -f1)); run there: bash $out/run.sh"
