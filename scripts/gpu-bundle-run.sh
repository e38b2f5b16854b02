#!/usr/bin/env bash
# run.sh of a GPU bundle (scripts/gpu-bundle.sh): the GPU checks, on a Hopper
# machine with CUDA 13 and Python with PyTorch. Logs and JSONL go to OUT
# (default /tmp/infir2-gpu). Each check prints rc=; nothing stops the rest.
#
#   bash run.sh [OUT [STAGES]]
# STAGES, space-separated (default "tests trainers speed sanitizer"):
#   tests      InfiR2CudaTests (attention's first)
#   fp8acc     PyTorch's FP8 accumulation (bench/gpu-fp8-accumulation.py)
#   trainers   trainer-gpu.test's single-process parts: the GPU against the CPU;
#              tensor-parallel 2 on the one GPU where mpirun is there
#   speed      20 steps of the 110 M and 0.5B trainers at 1x256 / 4x256, and
#              where a 0.5B fp8 step goes (INFIR2_PROFILE)
#   sanitizer  compute-sanitizer memcheck: the fp8 trainer, attention's and
#              the quantizers' tests
#   bench      bench.sh (bench/gpu/run.sh): the benchmark against PyTorch, in
#              OUT/bench ($INFIR2_BENCH_SHAPES: which shapes)
#   ncu        Nsight Compute's speed of light for the tile quantizer and
#              attention's gradient kernels (OUT/ncu-*.txt)
#   before     infir2-kernel-bench-before quantize, where the bundle has one
#              (an earlier build's, copied in by hand: a before/after)
cd "$(dirname "${BASH_SOURCE[0]}")"
out=${1:-${OUT:-/tmp/infir2-gpu}}
stages=${2:-tests trainers speed sanitizer}
x=$(mktemp -d); mkdir -p "$out"
[ -e t8 ] || tar xJf bin.tar.xz
lib=$x/lib; mkdir -p "$lib"; tar xJf lib.tar.xz -C "$lib"
for n in libcublasLt.so.13 libcudart.so.13 libnccl.so.2; do
  p=$(find /usr/local /opt /usr/lib -name $n 2>/dev/null | head -1)
  echo "$n: ${p:-not found}"; [ -n "$p" ] && lib=$lib:$(dirname "$p")
done
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
py() { python3 "python/$@"; }
run() { echo "+ $*"; "$@"; echo "rc=$?"; }
has() { [[ " $stages " == *" $1 "* ]]; }
nvidia-smi -L; run ./infir2-cuda-probe

if has tests; then
  echo "=== InfiR2CudaTests"
  # The loader's tests check that nothing loaded cuBLASLt before them: each
  # in a process of its own, as ctest runs them.
  for t in OpensTheLibraryOnFirstUseAndForwards ForwardsToTheLibrarysDefinitions; do
    ./InfiR2CudaTests --gtest_filter="CublasLtLoader.$t" > "$out/cudatests-loader-$t.log" 2>&1
    echo "CublasLtLoader.$t rc=$?"
  done
  for f in '*CudaAttention*' '-*CudaAttention*:CublasLtLoader.*'; do
    timeout 300 ./InfiR2CudaTests --gtest_filter="$f" > "$out/cudatests${f%%\**}.log" 2>&1
    echo "$f rc=$?"
    grep "worst\|Failure\|FAILED\|PASSED\|Expected\|actual\|Which is\|draw" \
      "$out/cudatests${f%%\**}.log" | grep -v "^draw" | sort | uniq -c | sort -rn | head -40
  done
fi
if has fp8acc; then
  echo "=== PyTorch's FP8 accumulation (independent of InfiR2)"
  run timeout 120 python3 python/gpu-fp8-accumulation.py 7
fi

T=README.md
# One trainer on the GPU and the CPU: the first step (loss, gradients' cosine
# and relative error bounds), then 5 steps of loss and grad-norm (bound).
gpu_vs_cpu() {
  local t=$1
  run timeout 120 ./$t --device cuda --data $T --seed 3 --dump-step $x/gpu-$t.st > /dev/null
  run timeout 120 ./$t --device cpu --data $T --seed 3 --dump-step $x/cpu-$t.st > /dev/null
  run py compare_trainer_step.py $x/gpu-$t.st $x/cpu-$t.st $2 $3 $4
  for d in cuda cpu; do
    run timeout 120 ./$t --device $d --data $T --steps 5 --log-every 1 \
      --log-jsonl $out/$d-$t.jsonl > /dev/null
  done
  run py compare_runs.py $out/cuda-$t.jsonl $out/cpu-$t.jsonl $5 loss grad_norm
}
if has trainers; then
  echo "=== trainer-gpu.test 1: FP32 model, bf16 recipe, GPU against CPU"
  gpu_vs_cpu t32 1e-5 0.99999 1e-4 1e-4
  echo "=== trainer-gpu.test 2: the FP8 recipe"
  gpu_vs_cpu t8 1e-3 0.995 8e-2 2e-2
  echo "=== trainer-errors.test's FP8-NAN on the GPU: a refused quantization skips the step as on the CPU"
  for d in cuda cpu; do
    timeout 60 ./t8 --device $d --data $T --steps 3 --lr 1e30 --log-every 1 2>&1 |
      grep "step skipped" > $x/nan-$d.txt
  done
  sed -i 's/ of the \(row\|column\)-wise copy//' $x/nan-cuda.txt # the CPU's words name no copy
  cat $x/nan-cuda.txt
  if [ -s $x/nan-cuda.txt ] && cmp -s $x/nan-cuda.txt $x/nan-cpu.txt; then
    echo "the CPU's lines, word for word rc=0"
  else
    diff $x/nan-cuda.txt $x/nan-cpu.txt; echo "rc=1"
  fi
  echo "=== trainer-gpu.test 3: a GPU checkpoint resumed on the CPU"
  run timeout 120 ./t32 --device cuda --data $T --steps 5 --save $x/ck --save-every 3 > /dev/null
  run timeout 120 ./t32 --device cpu --data $T --steps 5 --load $x/ck/step-000003 --log-every 1 --log-jsonl $x/resumed.jsonl > /dev/null
  grep -v '"step":[123],' $out/cuda-t32.jsonl > $x/gpu32-tail.jsonl
  run py compare_runs.py $x/resumed.jsonl $x/gpu32-tail.jsonl 1e-4 loss grad_norm
  echo "=== tensor-parallel 2 with sequence parallelism on the GPU (two ranks share it: MPI, staged)"
  if command -v mpirun > /dev/null; then
    run env INFIR2_COLLECTIVES=mpi OMP_NUM_THREADS=1 timeout 180 mpirun --allow-run-as-root \
      --oversubscribe -np 2 ./t32tp2 --device cuda --data $T --steps 5 --log-every 1 \
      --log-jsonl $out/cuda-t32tp2.jsonl > /dev/null
    run py compare_runs.py $out/cuda-t32tp2.jsonl $out/cpu-t32.jsonl 1e-4 loss grad_norm
  else
    echo "skipped: no mpirun here (CudaTensorParallel's tests ran the kernels as threads)"
  fi
fi

if has speed; then
  echo "=== GPU speed (20 steps; tokens/s of each 5-step interval)"
  for t in qwen-110m-bf16 qwen-110m-fp8 qwen2.5-0.5b-bf16 qwen2.5-0.5b-fp8; do
    timeout 180 ./$t --device cuda --data brown-train.txt --steps 20 --log-every 5 \
      --log-jsonl $out/$t.jsonl > $x/$t.log 2>&1; echo "$t rc=$?"
    grep "^training:\|memory" $x/$t.log
    grep -o '"tokens_per_s": *[0-9.]*' $out/$t.jsonl | paste -sd' '
  done
  echo "=== where a 0.5B fp8 step goes (INFIR2_PROFILE=1: every call synchronized)"
  INFIR2_PROFILE=1 timeout 180 ./qwen2.5-0.5b-fp8 --device cuda --data brown-train.txt \
    --steps 10 --log-every 10 2>&1 | grep "^profile" | head -12
fi
if has sanitizer; then
  if cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null); then
    echo "=== compute-sanitizer memcheck: fp8 trainer, 2 steps; attention's, the quantizers' and the losses' tests"
    timeout 300 "$cs" --tool memcheck --print-limit 10 ./t8 --device cuda --data $T --steps 2 2>&1 |
      grep "=====" | tail -8
    timeout 300 "$cs" --tool memcheck --print-limit 10 ./InfiR2CudaTests \
      --gtest_filter='*CudaAttention*:*CudaQuantize*:*CudaLoss*:*CudaTensorParallel*:*CudaMxfp8*' 2>&1 |
      grep "=====\|PASSED\|FAILED" | tail -8
  fi
fi
if has ncu; then
  if n=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null); then
    echo "=== Nsight Compute (speed of light, occupancy): the tile quantizer, attention's gradient"
    for k in "tileKernel quantize" "GradKernel attention"; do
      set -- $k
      timeout 150 "$n" --clock-control none --section SpeedOfLight --section Occupancy \
        --section LaunchStats -k "regex:$1" -c 2 ./infir2-kernel-bench $2 > "$out/ncu-$1.txt" 2>&1
      echo "$1 rc=$?"
      grep -E "^  [a-zA-Z_]+.*\(|Duration|Throughput|Achieved Occupancy|Registers Per|Block Limit" \
        "$out/ncu-$1.txt" | head -40
    done
  fi
fi
if has before && [ -x ./infir2-kernel-bench-before ]; then
  echo "=== the quantizers as the code before this bundle ran them (infir2-kernel-bench-before)"
  timeout 60 ./infir2-kernel-bench-before quantize
fi
if has bench; then
  echo "=== the benchmark (bench.sh)"
  bash bench.sh "$out/bench" "${INFIR2_BENCH_SHAPES:-}"
fi
rm -rf "$x"
