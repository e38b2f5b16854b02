#!/usr/bin/env bash
# Installs the dependencies (when missing) and builds InfiR2 into build/ (or
# $INFIR2_BUILD_DIR). Safe to re-run: configuring and building are incremental.
# Arguments go to install-deps.sh (--demo).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INFIR2_BUILD_DIR:-$root/build}

bash "$root/scripts/install-deps.sh" "$@"

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
cmake --build "$build"
