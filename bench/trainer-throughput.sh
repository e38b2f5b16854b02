#!/usr/bin/env bash
# Trainer tokens/s, side by side: the compiled bf16 and fp8 trainers against
# PyTorch's CPU trainer of the same model, micro-batch and optimizer
# (bench/torch_trainer.py), eager FP32 and with CPU BF16 autocast, all on 2
# threads and the same byte-tokenized Brown corpus. ROUNDS rounds, each
# running all four one after another, so that machine noise hits all of
# them; the medians and their ratios are printed, with each run's fraction
# of the BF16 GEMM limit (6 x GEMM parameters x tokens per step at the
# measured peak of bench/gemm-peak; attention is left out, as in the issue).
#
#   bash bench/trainer-throughput.sh [tiny|110m] [ROUNDS] [STEPS]
#     tiny: examples/tiny-qwen (1.6 M parameters), 4 x 128 tokens a step
#     110m: examples/hf-configs/qwen-110m.json, 4 x 256 tokens a step
#   (default: tiny 3 40, 110m 3 8; builds first)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
which=${1:-tiny}
case "$which" in
  tiny) config=$root/examples/tiny-qwen/config.json; model=$root/examples/tiny-qwen/model.mlir
        batch=4 seq=128 rounds=${2:-3} steps=${3:-40} log=10 ;;
  110m) config=$root/examples/hf-configs/qwen-110m.json; batch=4 seq=256
        rounds=${2:-3} steps=${3:-8} log=2
        model=$tmp/model.mlir
        "$bin/infir2-import" --hf-config "$config" --seq-len $seq --micro-batch $batch -o "$model" ;;
  *) echo "usage: trainer-throughput.sh [tiny|110m] [ROUNDS] [STEPS]" >&2; exit 2 ;;
esac
for r in fp8 bf16; do
  "$bin/infir2-compile" "$model" --recipe=$r -o "$tmp/trainer-$r"
done

trainer_tps() {
  "$tmp/trainer-$1" --device cpu --data "$data" --steps "$steps" --log-every $log \
    --log-jsonl "$tmp/$1.jsonl" >/dev/null 2>&1
  jsonl_tps "$tmp/$1.jsonl"
}
torch_tps() {
  /usr/bin/python3 "$root/bench/torch_trainer.py" "$config" "$data" $batch $seq "$steps" 2 "$1" |
    sed -E 's/.*: ([0-9]+) tok.*/\1/'
}
for i in $(seq "$rounds"); do
  torch_tps fp32 >> "$tmp/torch"
  torch_tps bf16-autocast >> "$tmp/autocast"
  trainer_tps bf16 >> "$tmp/bf16"
  trainer_tps fp8 >> "$tmp/fp8"
done
# GEMM parameters: the hidden layers' and the LM head's (not the embedding,
# a lookup). The limit: the BF16 GEMM rate measured now (bench/gemm-peak).
gemm_params=$(/usr/bin/python3 - "$config" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
d, i, l, v = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
hd = d // c["num_attention_heads"]; kv = c["num_key_value_heads"] * hd
print(l * (2 * d * d + 2 * d * kv + 3 * d * i) + d * v)
PY
)
peak=$("$bin/infir2-gemm-peak" 2>/dev/null | sed -n 's/^bf16: \([0-9.]*\).*/\1/p')
limit=$(awk -v p="$gemm_params" -v g="$peak" 'BEGIN {printf "%.0f", g * 1e9 / (6 * p)}')
t=$(median < "$tmp/torch"); a=$(median < "$tmp/autocast")
b=$(median < "$tmp/bf16"); f=$(median < "$tmp/fp8")
row() { printf "%-30s %8s %10.2f %12.2f %10.1f%%\n" "$1" "$2" \
  "$(awk -v x="$2" -v t="$t" 'BEGIN {print x / t}')" \
  "$(awk -v x="$2" -v a="$a" 'BEGIN {print x / a}')" \
  "$(awk -v x="$2" -v l="$limit" 'BEGIN {print 100 * x / l}')"; }
echo "model $which: $batch x $seq tokens a step, $gemm_params GEMM parameters;" \
     "BF16 GEMM peak $peak GFLOP/s -> limit $limit tok/s"
printf "%-30s %8s %10s %12s %11s\n" "trainer" "tok/s" "vs FP32" "vs autocast" "of limit"
row "PyTorch FP32 (eager, 2 thr)" "$t"
row "PyTorch BF16 autocast" "$a"
row "infir2 bf16 recipe" "$b"
row "infir2 fp8 recipe" "$f"
echo "(median of $rounds rounds of $steps steps; per round: $(paste -sd' ' "$tmp/torch") |" \
     "$(paste -sd' ' "$tmp/autocast") | $(paste -sd' ' "$tmp/bf16") | $(paste -sd' ' "$tmp/fp8"))"
