#!/usr/bin/python3
"""Compares two `infir2-run --dump` files tensor by tensor: the same names
and shapes, the inputs equal to the bit, and every result within RTOL of the
first file's (|a - b| <= RTOL * max|a|, elementwise against the tensor's
largest magnitude).

Usage: compare_dumps.py A.safetensors B.safetensors RTOL [--weights]

With --weights, the files are two models' weights (any float dtype): every
tensor is compared as a result, within RTOL.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_folder import read_safetensors  # noqa: E402  (the spec reader)


def load(path):
    out = {}
    for name, e in read_safetensors(path).entries.items():
        assert weights or e.dtype == "F64", f"{path}: {name} is not F64"
        out[name] = e.to_float64()
    return out


weights = sys.argv[4:] == ["--weights"]
a, b, rtol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
if sorted(a) != sorted(b):
    sys.exit(f"FAIL: the files hold different tensors: {sorted(set(a) ^ set(b))}")
ok, inputs, results, worst = True, 0, 0, 0.0
for name in sorted(a):
    x, y = a[name], b[name]
    if x.shape != y.shape:
        print(f"  {name}: shape {list(x.shape)} against {list(y.shape)}")
        ok = False
        continue
    if not weights and not name.startswith("result"):
        inputs += 1
        if not np.array_equal(x, y):
            print(f"  input {name} differs")
            ok = False
        continue
    results += 1
    scale = float(np.max(np.abs(x))) if x.size else 0.0
    err = float(np.max(np.abs(x - y))) / scale if scale > 0 else float(np.max(np.abs(y)))
    worst = max(worst, err)
    if err > rtol:
        print(f"  {name}: relative difference {err:.3g}")
        ok = False
print(f"{inputs} inputs equal, {results} results: worst relative difference "
      f"{worst:.3g} (bound {rtol})")
print("OK" if ok else "FAIL")
sys.exit(0 if ok else 1)
