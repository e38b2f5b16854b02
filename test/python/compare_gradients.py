#!/usr/bin/python3
"""Compares the gradients of two training steps dumped by `infir2-run --dump`
(the same model and inputs: an exact one and an FP8 one): for every
parameter, the cosine similarity and the relative L2 error of the FP8
gradient against the exact gradient.

Usage: compare_gradients.py EXACT.safetensors FP8.safetensors MIN_COSINE MAX_REL_ERROR

Results are result0 = loss, result1.. = the updated gradient accumulators
acc + g, in parameter order; the input accumulators (grad.<name>, drawn at
random by infir2-run) are subtracted, exactly in FP64, to recover g.
"""
import json
import struct
import sys

import numpy as np


def load(path):
    """Returns the gradients g_i = result_i - acc_i, in parameter order."""
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    header.pop("__metadata__", None)
    tensors, offsets = {}, {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        tensors[name] = np.frombuffer(blob[8 + n + b : 8 + n + e], dtype="<f8")
        offsets[name] = b
    accs = sorted((k for k in tensors if k.startswith("grad.")), key=offsets.get)
    results = sorted((k for k in tensors if k.startswith("result") and k != "result0"),
                     key=lambda k: int(k[len("result"):]))
    assert len(accs) == len(results), "expects one accumulator per gradient result"
    return {acc[len("grad."):]: tensors[res] - tensors[acc] for acc, res in zip(accs, results)}


exact, fp8 = load(sys.argv[1]), load(sys.argv[2])
min_cos, max_rel = float(sys.argv[3]), float(sys.argv[4])
grads = list(exact)
worst_cos, worst_rel, ok = 1.0, 0.0, True
for k in grads:
    a, b = exact[k], fp8[k]
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0.0:
        continue  # a gradient that is exactly zero (no signal to compare)
    cos = float(a @ b / (na * nb))
    rel = float(np.linalg.norm(a - b) / na)
    worst_cos, worst_rel = min(worst_cos, cos), max(worst_rel, rel)
    if cos < min_cos or rel > max_rel:
        ok = False
        print(f"  {k}: cosine {cos:.5f}, relative error {rel:.4f}")
print(f"{len(grads)} gradients: worst cosine {worst_cos:.5f} (bound {min_cos}), "
      f"worst relative error {worst_rel:.4f} (bound {max_rel})")
print("OK" if ok else "FAIL")
sys.exit(0 if ok else 1)
