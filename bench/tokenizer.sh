#!/usr/bin/env bash
# Tokenizer throughput on the Brown corpus (~6 MB of English, one JSONL
# document per paragraph), single thread (pinned to one core with taskset):
# infir2-data encode against the oracle the tests compare with,
# @lenml/tokenizers (transformers.js on node), for the Qwen2 and Llama 3
# tokenizers. Both time tokenizer.encode() only (not loading the tokenizer,
# not JSON); the ids of both are checked to be identical. Ours is the median
# of ROUNDS runs, the oracle's one run.
#
#   bash bench/tokenizer.sh [ROUNDS]   (default 3; build first)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INFIR2_BUILD_DIR:-$root/build}
rounds=${1:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bash "$root/scripts/get-corpus.sh" "$build/data" >/dev/null
bash "$root/scripts/get-tokenizers.sh" "$build/data/tokenizers" >/dev/null
/usr/bin/python3 -c '
import json, sys
with open(sys.argv[1], encoding="utf-8") as f, open(sys.argv[2], "w") as out:
    for line in f:
        if line.strip():
            out.write(json.dumps({"text": line}) + "\n")
' "$build/data/brown-train.txt" "$tmp/brown.jsonl"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
field() { sed -E "s#.* ([0-9.]+) $1.*#\1#"; }
printf "%-8s %-26s %10s %12s\n" tokenizer implementation "MB/s" "tokens/s"
for m in qwen3 llama3; do
  tok=$build/data/tokenizers/$m
  for i in $(seq "$rounds"); do
    taskset -c 0 "$build/bin/infir2-data" encode --stats --tokenizer "$tok/tokenizer.json" \
      --input "$tmp/brown.jsonl" 2> "$tmp/stats" > "$tmp/ours.$m"
    field "MB/s" < "$tmp/stats" >> "$tmp/mbs.$m"
    field "tokens/s" < "$tmp/stats" >> "$tmp/tps.$m"
  done
  printf "%-8s %-26s %10s %12s\n" "$m" "infir2-data encode" "$(median < "$tmp/mbs.$m")" "$(median < "$tmp/tps.$m")"
  taskset -c 0 env NODE_PATH="$build/data/tokenizers/node_modules" node \
    "$root/test/tools/infir2-data/oracle-encode.js" "$tok" "$tmp/brown.jsonl" --stats \
    2> "$tmp/stats" > "$tmp/oracle.$m"
  printf "%-8s %-26s %10s %12s\n" "$m" "@lenml/tokenizers (node)" "$(field "MB/s" < "$tmp/stats")" "$(field "tokens/s" < "$tmp/stats")"
  cmp -s "$tmp/ours.$m" "$tmp/oracle.$m" || { echo "tokenizer: $m ids differ from the oracle's" >&2; exit 1; }
done
echo "ids identical to the oracle's on all $(wc -l < "$tmp/brown.jsonl") documents, both tokenizers"
