#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test
# (lit + GoogleTest) under ctest, which ends with its pass/fail summary.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INFIR2_BUILD_DIR:-$root/build}

bash "$root/scripts/build.sh"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
