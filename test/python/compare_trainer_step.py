#!/usr/bin/python3
"""Compares a compiled trainer's first step (`trainer --dump-step`) with the
reference interpreter's (`infir2-run --entry train_step --inputs` on the same
dump), or with another trainer's dump of the same step (another device): the
loss, and for every parameter the cosine similarity and relative L2 error of
the gradient.

Usage: compare_trainer_step.py TRAINER.safetensors OTHER.safetensors
           MAX_LOSS_REL MIN_COSINE MAX_GRAD_REL

The interpreter's dump holds result0 = loss and result1.. = the updated
accumulators (0 + g), in parameter order, which is the trainer's order of
gradient.<name> tensors.
"""
import json
import struct
import sys

import numpy as np


def load(path):
    """Returns ({name: flat float64 array}, names in file order, {name: shape})."""
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    header.pop("__metadata__", None)
    out, order, shapes = {}, [], {}
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b, e = info["data_offsets"]
        dtype = {"F32": "<f4", "F64": "<f8"}[info["dtype"]]
        out[name] = np.frombuffer(blob[8 + n + b : 8 + n + e], dtype=dtype).astype(np.float64)
        order.append(name)
        shapes[name] = info["shape"]
    return out, order, shapes


def grade(loss, ref_loss, oracle, grads, max_loss, min_cos, max_rel):
    """Prints and checks the loss's relative difference and, for every
    (name, gradient, reference) in `grads`, the cosine and the relative L2
    error; returns whether all are within bounds."""
    ok = True
    loss_rel = abs(loss - ref_loss) / abs(ref_loss)
    print(f"loss: trainer {loss:.9g}, {oracle} {ref_loss:.12g}, relative difference "
          f"{loss_rel:.3g} (bound {max_loss:g})")
    ok &= loss_rel <= max_loss
    worst_cos, worst_rel = 1.0, 0.0
    for name, g, ref in grads:
        norm = np.linalg.norm(ref)
        if norm == 0:
            continue
        cos = float(g @ ref / (np.linalg.norm(g) * norm))
        rel = float(np.linalg.norm(g - ref) / norm)
        if cos < min_cos or rel > max_rel:
            print(f"  {name}: cosine {cos:.6f}, relative error {rel:.3g}  <- out of bounds")
            ok = False
        worst_cos, worst_rel = min(worst_cos, cos), max(worst_rel, rel)
    print(f"gradients of {len(grads)} parameters: worst cosine {worst_cos:.6f} (bound {min_cos}), "
          f"worst relative L2 error {worst_rel:.3g} (bound {max_rel:g})")
    print("OK" if ok else f"FAIL: the compiled trainer disagrees with the {oracle}")
    return ok


def main():
    trainer, order, _ = load(sys.argv[1])
    other, _, _ = load(sys.argv[2])
    max_loss, min_cos, max_rel = (float(x) for x in sys.argv[3:6])
    names = [k[len("gradient."):] for k in order if k.startswith("gradient.")]
    if "output.loss" in other:
        # Another trainer's dump (another device): it must have started from
        # the same weights and batch, bit for bit.
        for k in order:
            if not k.startswith(("gradient.", "output.")) and not np.array_equal(trainer[k], other[k]):
                print(f"FAIL: the two dumps differ in {k}: not the same weights and batch")
                sys.exit(1)
        grads = [(n, trainer["gradient." + n], other["gradient." + n]) for n in names]
        ref_loss, oracle = float(other["output.loss"][0]), "other trainer"
    else:
        grads = [(n, trainer["gradient." + n], other[f"result{i + 1}"]) for i, n in enumerate(names)]
        ref_loss, oracle = float(other["result0"][0]), "interpreter"
    ok = grade(float(trainer["output.loss"][0]), ref_loss, oracle, grads, max_loss, min_cos, max_rel)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
