#!/usr/bin/env bash
# Builds InfiR2 (installing what is missing, as build.sh does) and installs
# it into PREFIX: the tools, headers, libraries, runtime archives and the
# CMake package (docs/Embedding.md). The prefix can be moved afterwards.
#
#   bash scripts/install.sh PREFIX
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: bash scripts/install.sh PREFIX" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INFIR2_BUILD_DIR:-$root/build}
bash "$root/scripts/build.sh"
cmake --install "$build" --prefix "$1" > /dev/null
echo "installed into $1: find_package(InfiR2 0.1 CONFIG REQUIRED) with -DInfiR2_DIR=$1/lib/cmake/InfiR2"
