#!/usr/bin/env bash
# The FP8 recipe's fidelity against BF16, over several seeds (issue "FP8
# numerics", item 3; docs/Fidelity.md): the example model (tiny-qwen, 1.6 M
# parameters, byte-level: what trains in minutes on 2 cores) trained STEPS
# steps on the Brown corpus with each recipe and each seed (the seed draws
# the initial weights and the data order), then evaluated on the whole
# held-out split (108,868 bytes: 212 batches of 4 x 128 tokens); then each
# run's last weights are fine-tuned (SFT_STEPS steps, default 300; 0 skips
# it) with the same recipe on chat data, the dialogue of Brown's fiction
# as conversations with the loss on the assistant's words only, and
# evaluated on held-out conversations. For each stage, prints each seed's
# final held-out losses and the relative gap of each FP8 recipe to BF16,
# their mean and sample standard deviation (and, paired by seed, each
# other FP8 recipe's gap less fp8's), and plots each recipe's curve (the
# mean over the seeds) into OUT/curves.png and OUT/sft-curves.png
# (bench/fidelity_report.py). The recipes: bf16, fp8 (the InfiR2 recipe:
# 128x128 weight blocks, 1x128 groups) and mxfp8 (granularity=mxfp8: 1x32
# blocks along K with E8M0 scales, docs/MXFP8.md); RECIPES="bf16 fp8" runs
# fewer, and mxfp8-floor is MXFP8 under the OCP specification's floor scale
# rule.
#
#   bash bench/fidelity.sh [STEPS] [SEEDS] [OUT]   (default 600, "1 2 3",
#                                                   build/fidelity)
set -euo pipefail
steps=${1:-600}
seeds=${2:-1 2 3}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
out=${3:-$root/build/fidelity}
mkdir -p "$out"
heldout=$root/build/data/brown-heldout.txt
recipes=${RECIPES:-bf16 fp8 mxfp8}
case " $recipes " in
  *" bf16 "*) ;;
  *) echo "fidelity.sh: RECIPES must include bf16, the baseline of every gap" >&2; exit 2 ;;
esac
for r in $recipes; do
  case $r in
    bf16 | fp8) options=(--recipe=$r) ;;
    mxfp8) options=(--recipe=fp8 --recipe-options=granularity=mxfp8) ;;
    mxfp8-floor) options=(--recipe=fp8 "--recipe-options=granularity=mxfp8 scales=floor") ;;
    *) echo "fidelity.sh: unknown recipe '$r' in RECIPES (bf16, fp8, mxfp8, mxfp8-floor)" >&2
       exit 2 ;;
  esac
  "$bin/infir2-compile" "$root/examples/tiny-qwen/model.mlir" "${options[@]}" -o "$tmp/trainer-$r"
done
for seed in $seeds; do
  for r in $recipes; do
    rm -rf "$out/ck-$r-seed$seed"
    "$tmp/trainer-$r" --device cpu --data "$data" --eval-data "$heldout" --steps "$steps" \
      --lr 3e-3 --warmup 30 --schedule cosine --seed "$seed" --log-every 25 \
      --eval-every "$steps" --eval-batches 212 --log-jsonl "$out/$r-seed$seed.jsonl" \
      --save "$out/ck-$r-seed$seed" --save-every "$steps" \
      > "$out/$r-seed$seed.log" 2>&1
  done
done
# SFT from each run's last weights, with the same recipe and seed: the
# dialogue of Brown's fiction as conversations (scripts/get-dialogues.sh),
# byte-level, the loss on the assistant's words only; held out, 62
# conversations (5,805 of their bytes in the loss). One token stream cut
# every 128 bytes, so that no assistant's words are cut away.
sft=${SFT_STEPS:-300}
if [ "$sft" -gt 0 ]; then
  bash "$root/scripts/get-dialogues.sh" "$root/build/data" > /dev/null
  for part in train heldout; do
    /usr/bin/python3 "$root/scripts/byte-chats.py" "$root/build/data/dialogues-$part.jsonl" \
      "$out/chats-$part" > /dev/null
  done
  for seed in $seeds; do
    for r in $recipes; do
      "$tmp/trainer-$r" --device cpu --load "$(printf '%s/ck-%s-seed%s/step-%06d' "$out" "$r" "$seed" "$steps")" \
        --load-weights-only --data "$out/chats-train" --eval-data "$out/chats-heldout" \
        --packing stream --steps "$sft" --lr 1e-3 --warmup 10 --schedule cosine --seed "$seed" \
        --log-every 25 --eval-every "$sft" --eval-batches 28 \
        --log-jsonl "$out/$r-seed$seed-sft.jsonl" > "$out/$r-seed$seed-sft.log" 2>&1
    done
  done
fi
/usr/bin/python3 "$root/bench/fidelity_report.py" "$out" "$recipes" $seeds
