# Sourced by the trainer benchmarks: builds (unless INFIR2_BENCH_NO_BUILD is
# set, for comparing other builds), fetches the Brown corpus, and sets
#   root  the repository, bin  the build's tools, tmp  a scratch folder
#   (removed at exit), data  the byte-level training text;
# and defines
#   median          the median of numbers on standard input;
#   jsonl_tps FILE  the mean tokens/s of a trainer's --log-jsonl intervals
#                   after the first (warm-up);
#   bench_model WHICH IMPORT USAGE
#                   sets `model` to the benchmark model WHICH (tiny: the
#                   example, 4 x 128; 110m: 4 x 256; 0.5b: Qwen2.5-0.5B,
#                   1 x 256), imported with the infir2-import IMPORT; exits
#                   with USAGE for any other.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ -n "${INFIR2_BENCH_NO_BUILD:-}" ] || bash "$root/scripts/build.sh" >/dev/null
bin=${INFIR2_BUILD_DIR:-$root/build}/bin
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bash "$root/scripts/get-corpus.sh" "$root/build/data" >/dev/null
data=$root/build/data/brown-train.txt
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
bench_model() {
  local config
  case "$1" in
    tiny) model=$root/examples/tiny-qwen/model.mlir; return ;;
    110m) config="qwen-110m.json --seq-len 256 --micro-batch 4" ;;
    0.5b) config="qwen2.5-0.5b.json --seq-len 256 --micro-batch 1" ;;
    *) echo "usage: $3" >&2; exit 2 ;;
  esac
  model=$tmp/model.mlir
  # shellcheck disable=SC2086 # the config's name, then its flags
  "$2" --hf-config "$root/examples/hf-configs/"$config -o "$model"
}
jsonl_tps() {
  tail -n +2 "$1" | sed -E 's/.*"tokens_per_s": ?([0-9.e+-]+).*/\1/' |
    awk '{s += $1; n++} END {printf "%.0f\n", s / n}'
}
