#!/usr/bin/env bash
# The GPU benchmark (issue 28), side by side in one run, inside a GPU bundle
# (scripts/gpu-bundle.sh packs it, as bench.sh, with the trainers it runs):
#   bash bench.sh OUT [SHAPES]
# SHAPES: a space-separated subset of "qwen-110m qwen2.5-0.5b qwen2.5-7b-4layers"
# (all by default). For each shape: our bf16 and fp8 trainers (8 steps; and
# fp8cost, the FP8 recipe with cost-model=h100, with the step-time model's
# predictions beside them),
# PyTorch eager and torch.compile (bench/gpu/torch_step.py, 6 steps;
# INFIR2_BENCH_TORCH chooses the modes), then
# the attention kernels against PyTorch's SDPA; raw results in OUT, the table
# (summarize.py) last.
cd "$(dirname "${BASH_SOURCE[0]}")"
out=${1:-/tmp/infir2-bench}
shapes=${2:-qwen-110m qwen2.5-0.5b qwen2.5-7b-4layers}
# INFIR2_BENCH_TORCH: which PyTorch modes (default "eager compile").
torch_modes=${INFIR2_BENCH_TORCH-eager compile}
mkdir -p "$out"
declare -A batch=([qwen-110m]=8 [qwen2.5-0.5b]=8 [qwen2.5-7b-4layers]=2)
declare -A seq=([qwen-110m]=1024 [qwen2.5-0.5b]=2048 [qwen2.5-7b-4layers]=4096)
for s in $shapes; do
  B=${batch[$s]} S=${seq[$s]}
  echo "{\"name\": \"$s\", \"batch\": $B, \"seq\": $S, \"config\": \"configs/$s.json\"}" \
    > "$out/shape-$s.json"
  cp predicted-$s-*.txt "$out/" 2>/dev/null
  for r in bf16 fp8 fp8cost; do
    [ -x ./bench-$s-$r ] || { echo "ours $s $r: no trainer in the bundle"; continue; }
    timeout 240 ./bench-$s-$r --device cuda --data brown-train.txt --steps 8 \
      --log-every 1 --log-jsonl "$out/ours-$s-$r.jsonl" > "$out/ours-$s-$r.log" 2>&1
    echo "ours $s $r rc=$?: $(grep -o 'the GPU holds [0-9.]* GiB' "$out/ours-$s-$r.log")"
  done
  for m in $torch_modes; do
    # INFIR2_BENCH_COMPILE: the shapes torch.compile runs on (default all).
    [ $m = compile ] && [[ " ${INFIR2_BENCH_COMPILE-$shapes} " != *" $s "* ]] && continue
    timeout 300 python3 python/torch_step.py "configs/$s.json" $B $S 6 $m \
      > "$out/torch-$s-$m.json" 2> "$out/torch-$s-$m.log"
    echo "torch $s $m rc=$?: $(tail -1 "$out/torch-$s-$m.json")"
  done
done
# Where the time of a step goes for INFIR2_BENCH_PROFILE's shapes
# (INFIR2_PROFILE=gpu: each entry point's GPU time from CUDA events, nothing
# synchronized; 6 steps, the first one's start-up included), and the fp8
# step with the three-pass quantizers (INFIR2_CUDA_QUANTIZE).
for s in ${INFIR2_BENCH_PROFILE-qwen2.5-0.5b}; do
  for r in bf16 fp8; do
    echo "--- profile: $s $r, 6 steps"
    INFIR2_PROFILE=gpu timeout 120 ./bench-$s-$r --device cuda --data brown-train.txt \
      --steps 6 --log-every 6 2>&1 | grep "^profile" | head -24 | tee "$out/profile-$s-$r.txt"
  done
  [ "${INFIR2_BENCH_PASSES-1}" = 0 ] && continue # INFIR2_BENCH_PASSES=0: no before/after
  INFIR2_CUDA_QUANTIZE=passes timeout 240 ./bench-$s-fp8 --device cuda --data brown-train.txt \
    --steps 8 --log-every 1 --log-jsonl "$out/ours-$s-fp8-passes.jsonl" > "$out/ours-$s-fp8-passes.log" 2>&1
  echo "ours $s fp8 with the three-pass quantizers rc=$?"
done
echo "=== attention kernels"
# INFIR2_BENCH_KERNELS: which kernel cases (infir2-kernel-bench's
# arguments; default all: attention, quantize, gemm).
timeout 120 ./infir2-kernel-bench ${INFIR2_BENCH_KERNELS-} > "$out/kernels-ours.jsonl" 2>&1
echo "rc=$?"
INFIR2_CUDA_QUANTIZE=passes timeout 60 ./infir2-kernel-bench quantize \
  >> "$out/kernels-ours.jsonl" 2>&1; echo "rc=$?"
timeout 120 python3 python/torch_attention.py > "$out/attention-torch.jsonl" 2>&1; echo "rc=$?"
python3 python/summarize.py "$out" | tee "$out/table.md"
