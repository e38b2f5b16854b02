#!/usr/bin/env bash
# Installs, through apt, everything InfiR2 needs to build and test on a fresh Debian 12 machine.
# Idempotent and non-interactive: packages already present are not reinstalled, and apt is not
# touched at all when nothing is missing. Must run as root (or with sudo available).
set -euo pipefail

packages=(
  # MLIR/LLVM 22 from Debian (headers, static libs, mlir-tblgen, FileCheck, lit).
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  # Build tools: lld links ~5x faster than GNU ld; ccache makes rebuilds cheap.
  cmake ninja-build g++ lld ccache
  # Unit tests, and PyTorch as an independent numerical oracle (run with
  # Debian's /usr/bin/python3, which sees Debian's Python packages).
  libgtest-dev python3-torch python3-numpy
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
