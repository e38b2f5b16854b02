#!/usr/bin/python3
"""Compares `result #0: X` of two infir2-run outputs: |a - b| / |a| <= RTOL.

Usage: compare_results.py A.txt B.txt RTOL
"""
import re
import sys


def result0(path):
    for line in open(path):
        m = re.match(r"result #0: (\S+)", line)
        if m:
            return float(m.group(1))
    sys.exit(f"{path}: no 'result #0' line")


a, b, rtol = result0(sys.argv[1]), result0(sys.argv[2]), float(sys.argv[3])
rel = abs(a - b) / abs(a)
print(f"exact {a:.10g}  fp8 {b:.10g}  relative difference {rel:.3g} (tolerance {rtol:g})")
sys.exit(0 if rel <= rtol else 1)
