#!/usr/bin/env bash
# The whole InfiR2 workflow on the example model at Qwen2's vocabulary, on
# real text, in minutes on 2 cores (docs/Workflows.md, "The workflow, end
# to end"): pretokenize -> continual pre-training, warmup then stable ->
# the decay stage, resumed from the CPT checkpoint -> SFT on real
# conversations (the dialogue of the Brown corpus's fiction) -> evaluation
# -> FP8 export -> generation from the SFT model and from the export's BF16
# twin. Prints each stage's held-out losses in one table at the end.
#
#   scripts/workflow.sh [WORKDIR] [CPT_STEPS] [DECAY_STEPS] [SFT_STEPS]
#
# Installs what is missing and builds first (scripts/build.sh, incremental),
# so it runs from a fresh clone; fetches the tokenizer and the corpus with
# npm; the FP8 export's twin runs in Debian's /usr/bin/python3 (numpy).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$root/build/workflow}
cpt=${2:-60}
decay=${3:-20}
sft=${4:-40}
bin=$root/build/bin
bash "$root/scripts/build.sh" >/dev/null
mkdir -p "$work"
work=$(cd "$work" && pwd)
bash "$root/scripts/get-tokenizers.sh" "$root/build/data/tokenizers" >/dev/null
bash "$root/scripts/get-corpus.sh" "$root/build/data" >/dev/null
tok=$root/build/data/tokenizers/qwen3/tokenizer.json
steps=$((cpt + decay))
at() { printf '%s/step-%06d' "$1" "$2"; }

echo "== 1. data: Brown as JSONL documents; conversations from its fiction's dialogue"
/usr/bin/python3 - "$root/build/data" "$work" <<'PY'
import json, sys
data, work = sys.argv[1], sys.argv[2]
for name in ("train", "heldout"):
    with open(f"{work}/brown-{name}.jsonl", "w", encoding="utf-8") as f:
        for p in open(f"{data}/brown-{name}.txt", encoding="utf-8"):
            if p.strip():
                f.write(json.dumps({"text": p.strip()}) + "\n")
PY
bash "$root/scripts/get-dialogues.sh" "$work"
head -1 "$work/dialogues-train.jsonl"

echo "== 2. pretokenize (Megatron .bin/.idx) and render the conversations (tokens + loss mask)"
"$bin/infir2-data" pretokenize --tokenizer "$tok" --input "$work/brown-train.jsonl" \
  --output-prefix "$work/brown" --append-eod --workers 2
"$bin/infir2-data" pretokenize --tokenizer "$tok" --input "$work/brown-heldout.jsonl" \
  --output-prefix "$work/brown-heldout" --append-eod
"$bin/infir2-data" sft --tokenizer "$tok" --input "$work/dialogues-train.jsonl" --output-prefix "$work/chats"
"$bin/infir2-data" sft --tokenizer "$tok" --input "$work/dialogues-heldout.jsonl" --output-prefix "$work/chats-heldout"

echo "== 3. the model: the example's shape at Qwen2's vocabulary, FP8 recipe, with a decode step"
"$bin/infir2-import" --hf-config "$root/examples/tiny-qwen/config-qwen-vocab.json" \
  --seq-len 128 --micro-batch 4 -o "$work/model.mlir"
"$bin/infir2-compile" "$work/model.mlir" --recipe=fp8 --recipe-options="decode-length=128" -o "$work/trainer"
T="$work/trainer"
eval_stage() { # NAME MODEL: held-out loss on Brown and on the conversations
  local b c
  b=$("$T" --eval-only --load "$2" --eval-data "$work/brown-heldout" --eval-batches 8 2>/dev/null | sed -n 's/^eval: loss \([0-9.]*\).*/\1/p')
  c=$("$T" --eval-only --load "$2" --eval-data "$work/chats-heldout" --eval-batches 8 2>/dev/null | sed -n 's/^eval: loss \([0-9.]*\).*/\1/p')
  printf '| %-34s | %12s | %18s |\n' "$1" "$b" "$c" >> "$work/table.md"
}
printf '| %-34s | %12s | %18s |\n|%s|%s|%s|\n' "stage" "Brown loss" "conversation loss" \
  "------------------------------------" "--------------" "--------------------" > "$work/table.md"

echo "== 4. continual pre-training: warmup, then stable (a constant learning rate), $cpt steps"
rm -rf "$work/cpt"
"$T" --data "$work/brown" --steps "$cpt" --lr 2e-3 --schedule constant --warmup 10 \
  --log-every 20 --save "$work/cpt" --tokenizer "$tok" --seed 1
eval_stage "CPT, stable phase (step $cpt)" "$(at "$work/cpt" "$cpt")"

echo "== 5. the decay stage, resumed exactly from the CPT checkpoint: steps $((cpt + 1))-$steps"
rm -rf "$work/decay"
"$T" --data "$work/brown" --steps "$steps" --lr 2e-3 --schedule wsd --warmup 10 --decay "$decay" \
  --log-every 10 --load "$(at "$work/cpt" "$cpt")" --save "$work/decay" --seed 1
eval_stage "CPT, after the decay (step $steps)" "$(at "$work/decay" "$steps")"

echo "== 6. SFT on the conversations (loss on the assistant's tokens), from the decayed weights"
rm -rf "$work/sft"
"$T" --data "$work/chats" --steps "$sft" --lr 1e-3 --schedule wsd --warmup 5 --decay 10 \
  --log-every 10 --load "$(at "$work/decay" "$steps")" --load-weights-only --save "$work/sft" --seed 1
eval_stage "SFT (step $sft)" "$(at "$work/sft" "$sft")"

echo "== 7. FP8 export for inference, and its BF16 twin (the exported weights, dequantized)"
rm -rf "$work/export" "$work/twin"
"$T" --load "$(at "$work/sft" "$sft")" --export-fp8 "$work/export"
/usr/bin/python3 "$root/scripts/fp8-twin.py" "$work/export" "$work/twin"
eval_stage "FP8 export (its BF16 twin)" "$work/twin"

echo "== 8. generation (greedy): a continuation from the decayed CPT model, then replies"
echo "   (chat template) from the SFT model and from the export's twin"
echo "-- $(basename "$(at "$work/decay" "$steps")"): The old man"
"$T" --load "$(at "$work/decay" "$steps")" --generate --prompt "The old man" --max-new-tokens 24
echo
prompt="Where are you going?"
for model in "$(at "$work/sft" "$sft")" "$work/twin"; do
  echo "-- $(basename "$model"): user: $prompt"
  printf 'assistant: '
  "$T" --load "$model" --generate --chat --prompt "$prompt" --max-new-tokens 24
done

echo
echo "== held-out losses (8 batches of 4 x 128 tokens; conversations: the assistant's tokens)"
cat "$work/table.md"
