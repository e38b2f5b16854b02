#!/usr/bin/python3
"""Compares two trainer runs' --log-jsonl files step by step: the same steps,
and each of the given fields within a relative tolerance.

Usage: compare_runs.py A.jsonl B.jsonl RTOL FIELD [FIELD ...]
"""
import json
import sys

a = [json.loads(line) for line in open(sys.argv[1])]
b = [json.loads(line) for line in open(sys.argv[2])]
rtol, fields = float(sys.argv[3]), sys.argv[4:]
ok = len(a) == len(b) and len(a) > 0
if not ok:
    print(f"FAIL: {len(a)} and {len(b)} logged steps")
worst = 0.0
for ra, rb in zip(a, b):
    if ra["step"] != rb["step"]:
        print(f"FAIL: step {ra['step']} against step {rb['step']}")
        ok = False
    for f in fields:
        rel = abs(ra[f] - rb[f]) / max(abs(rb[f]), 1e-30)
        worst = max(worst, rel)
        if rel > rtol:
            print(f"FAIL: step {ra['step']}: {f} {ra[f]} against {rb[f]} (relative {rel:.3g})")
            ok = False
print(f"{len(a)} steps, worst relative difference {worst:.3g} (tolerance {rtol:g})")
print("OK" if ok else "FAIL")
sys.exit(0 if ok else 1)
