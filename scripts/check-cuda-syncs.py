#!/usr/bin/env python3
"""Fails when the CUDA backend synchronizes where nobody has said why.

Counts, per file of DIR (runtime/lib/cuda), the calls that make the host
wait for the GPU or run on the legacy default stream, serializing with every
other stream (neither can be captured in a CUDA graph): cudaMemcpy and its
2D/3D/peer/symbol forms, cudaMemset and its 2D/3D forms,
cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize and
cudaFree. The asynchronous copies and memsets on the step's stream are not
counted; a read-back through them needs one of the synchronizations, which
is. The counts must equal those of DIR/host-syncs.txt, whose lines are
`file call count: reason`. More calls than listed is an error naming them (a
new one needs a reason, or better none); fewer is an error too, so that the
list stays the list. Comments and string literals are ignored.

Usage: check-cuda-syncs.py DIR"""
import os
import re
import sys

CALLS = ("cudaMemcpy", "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemcpyPeer",
         "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol", "cudaMemset", "cudaMemset2D",
         "cudaMemset3D", "cudaDeviceSynchronize", "cudaStreamSynchronize",
         "cudaEventSynchronize", "cudaFree")


def strip_comments(text):
    """The code without comments and string or character literals."""
    token = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                       re.S)
    return token.sub(lambda m: "" if m.group(0)[0] == "/" else '""', text)


def counted(folder):
    counts = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith((".cu", ".cuh", ".h", ".cpp")):
            continue
        code = strip_comments(open(os.path.join(folder, name)).read())
        for call in CALLS:
            n = len(re.findall(r"\b%s\s*\(" % call, code))
            if n:
                counts[(name, call)] = n
    return counts


def allowed(path):
    entries = {}
    for number, line in enumerate(open(path), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"(\S+)\s+(\S+)\s+(\d+):\s*(\S.*)$", line)
        if not m or m.group(2) not in CALLS:
            sys.exit(f"{path}:{number}: expected `file call count: reason`, got: {line}")
        entries[(m.group(1), m.group(2))] = int(m.group(3))
    return entries


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    folder = sys.argv[1]
    have, listed = counted(folder), allowed(os.path.join(folder, "host-syncs.txt"))
    errors = []
    for key in sorted(set(have) | set(listed)):
        n, m = have.get(key, 0), listed.get(key, 0)
        if n > m:
            errors.append(f"{key[0]}: {n} {key[1]} call(s), {m} allowed in host-syncs.txt: "
                          "make it asynchronous on the step's stream, or list it with a reason")
        elif n < m:
            errors.append(f"{key[0]}: {n} {key[1]} call(s), but host-syncs.txt allows {m}: "
                          "lower the count there")
    for e in errors:
        print(f"check-cuda-syncs: {e}", file=sys.stderr)
    if errors:
        sys.exit(1)
    total = sum(have.values())
    print(f"check-cuda-syncs: {total} synchronizing call sites, each listed with its reason")


main()
