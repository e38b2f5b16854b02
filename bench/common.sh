# Sourced by the trainer benchmarks: builds (unless INFIR2_BENCH_NO_BUILD is
# set, for comparing other builds), fetches the Brown corpus, and sets
#   root  the repository, bin  the build's tools, tmp  a scratch folder
#   (removed at exit), data  the byte-level training text;
# and defines
#   median          the median of numbers on standard input;
#   jsonl_tps FILE  the mean tokens/s of a trainer's --log-jsonl intervals
#                   after the first (warm-up).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ -n "${INFIR2_BENCH_NO_BUILD:-}" ] || bash "$root/scripts/build.sh" >/dev/null
bin=${INFIR2_BUILD_DIR:-$root/build}/bin
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bash "$root/scripts/get-corpus.sh" "$root/build/data" >/dev/null
data=$root/build/data/brown-train.txt
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
jsonl_tps() {
  tail -n +2 "$1" | sed -E 's/.*"tokens_per_s": ?([0-9.e+-]+).*/\1/' |
    awk '{s += $1; n++} END {printf "%.0f\n", s / n}'
}
