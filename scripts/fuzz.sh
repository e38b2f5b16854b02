#!/usr/bin/env bash
# Runs every libFuzzer target of fuzz/ for SECONDS each (default 60), one
# after another, building the sanitizer tree first when needed.
#
#   fuzz.sh [SECONDS] [TARGET...]     e.g. fuzz.sh 300 safetensors cli
#
# Each target starts from its seed corpus (fuzz/corpus/<target>, never
# written) and from what earlier runs kept, under $INFIR2_FUZZ_DIR (default
# /tmp/infir2-fuzz, outside the source tree): corpus/<target>/ grows, and a
# crashing input is written to artifacts/<target>-crash-<sha1>. Prints, per
# target, the executions and any crash file; exits 1 if any target crashed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INFIR2_SANITIZE_BUILD_DIR:-$root/build-sanitize}
out=${INFIR2_FUZZ_DIR:-/tmp/infir2-fuzz}
seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=($(ls "$root/fuzz/corpus"))
fi

source "$root/scripts/sanitizer-env.sh"
INFIR2_BUILD_DIR=$build bash "$root/scripts/build.sh" --sanitize >/dev/null

status=0
printf '%-16s %8s %12s  %s\n' target seconds executions crash
for t in "${targets[@]}"; do
  mkdir -p "$out/corpus/$t" "$out/artifacts"
  log="$out/$t.log"
  set +e
  "$build/bin/infir2-fuzz-$t" -max_total_time="$seconds" -timeout=25 \
    -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/$t-" \
    "$out/corpus/$t" "$root/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
  if [ "$rc" -ne 0 ]; then
    status=1
    crash=${crash:-"exit $rc, see $log"}
  fi
  printf '%-16s %8s %12s  %s\n' "$t" "$seconds" "${runs:-?}" "${crash:--}"
done
exit "$status"
