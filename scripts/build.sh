#!/usr/bin/env bash
# Installs the dependencies (when missing) and builds InfiR2 into build/ (or
# $INFIR2_BUILD_DIR). Safe to re-run: configuring and building are incremental.
#
#   build.sh             the normal build (Release, CUDA where nvcc is)
#   build.sh --sanitize  ASan+UBSan with clang-22, and the libFuzzer targets
#                        of fuzz/ (CUDA off: the normal build compiles the .cu)
#   build.sh --demo      also installs what the demo needs
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INFIR2_BUILD_DIR:-$root/build}

bash "$root/scripts/install-deps.sh" "$@"

sanitize=0
for arg in "$@"; do
  [ "$arg" = "--sanitize" ] && sanitize=1
done

if [ ! -f "$build/build.ninja" ]; then
  config=(-DCMAKE_BUILD_TYPE=Release)
  if [ "$sanitize" = 1 ]; then
    # -O1 and line tables: readable sanitizer stacks, a faster build, and
    # tests still quick enough for CI.
    export CC=clang-22 CXX=clang++-22
    config=(-DCMAKE_BUILD_TYPE=Release
            "-DCMAKE_C_FLAGS_RELEASE=-O1 -gline-tables-only -DNDEBUG"
            "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -gline-tables-only -DNDEBUG"
            -DINFIR2_ENABLE_SANITIZERS=ON -DINFIR2_ENABLE_CUDA=OFF)
  fi
  cmake -S "$root" -B "$build" -G Ninja "${config[@]}" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
cmake --build "$build"
