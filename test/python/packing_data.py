#!/usr/bin/python3
"""Writes the SFT datasets of trainer-packing.test (Megatron format, through
the independent writer megatron_indexed.py), and compares the trainer's
first-step dumps (--dump-step) made on them.

  packing_data.py write DIR TEXT
      Documents A (40 tokens) and B (60) from TEXT's first paragraphs (byte
      ids), each with a 12-token prompt masked out (0) and the rest in (1):
        DIR/packed   A and B  (one sample of 129 tokens holds both)
        DIR/a, DIR/b A alone, B alone
        DIR/zero1    A masked out entirely, then B
        DIR/zero2    A' (A's bytes reversed) masked out entirely, then B
  packing_data.py same DUMP1 DUMP2
      The loss and every gradient bit for bit equal, the first document of
      the sample being entirely masked out.
  packing_data.py sum PACKED DUMP_A DUMP_B TOL
      The packed step's loss and gradients times its masked-in token count
      equal the sums of A's and B's alone (each times its count), within TOL
      relative (L2 over each gradient).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from compare_trainer_step import load  # noqa: E402
from megatron_indexed import write  # noqa: E402


def write_sets(out, text_path):
    paragraphs = [p for p in open(text_path, "rb").read().split(b"\n\n") if len(p) >= 60]
    a, b = list(paragraphs[0][:40]), list(paragraphs[1][:60])
    mask = lambda d: [0] * 12 + [1] * (len(d) - 12)  # noqa: E731
    zero = lambda d: [0] * len(d)  # noqa: E731
    sets = {"packed": [(a, mask(a)), (b, mask(b))], "a": [(a, mask(a))], "b": [(b, mask(b))],
            "zero1": [(a, zero(a)), (b, mask(b))], "zero2": [(a[::-1], zero(a)), (b, mask(b))]}
    for name, docs in sets.items():
        write(os.path.join(out, name), "uint16", [d for d, _ in docs])
        write(os.path.join(out, name + ".mask"), "uint8", [m for _, m in docs])


def gradients(dump, order):
    return {k: np.asarray(dump[k]) for k in order if k.startswith("gradient.")}


def main():
    cmd = sys.argv[1]
    if cmd == "write":
        write_sets(sys.argv[2], sys.argv[3])
        return
    if cmd == "same":
        (d1, o1, _), (d2, _, _) = load(sys.argv[2]), load(sys.argv[3])
        g1, g2 = gradients(d1, o1), gradients(d2, o1)
        # The masked-out document must come first, so that the other one
        # could see it were segments ignored.
        pos = d1["input.positions"]
        first = int(np.argmax(pos[1:] == 0)) + 1
        print(f"first document: {first} tokens, "
              f"{int(np.sum(d1['input.loss_mask'][:first]))} masked in")
        bad = [k for k in g1 if not np.array_equal(g1[k], g2[k])]
        if first < 2 or np.any(d1["input.loss_mask"][:first]):
            bad.append("the first document is not the masked-out one")
        same_loss = np.array_equal(d1["output.loss"], d2["output.loss"])
        print(f"loss {float(d1['output.loss'][0]):.9g} vs {float(d2['output.loss'][0]):.9g}; "
              f"{len(g1) - len(bad)} of {len(g1)} gradients bit for bit equal")
        print("OK" if same_loss and not bad and g1 else "FAIL: " + ", ".join(bad[:5]))
        return
    if cmd == "sum":
        dumps = [load(p) for p in sys.argv[2:5]]
        tol = float(sys.argv[5])
        n = [float(np.sum(d["input.loss_mask"])) for d, _, _ in dumps]
        loss = [float(d["output.loss"][0]) for d, _, _ in dumps]
        print(f"masked-in tokens: packed {n[0]:g}, A {n[1]:g}, B {n[2]:g}")
        ok = n[0] == n[1] + n[2] and n[0] > 0
        want = (loss[1] * n[1] + loss[2] * n[2]) / n[0]
        rel = abs(loss[0] - want) / abs(want)
        print(f"loss packed {loss[0]:.9g}, from A and B alone {want:.9g}: relative {rel:.3g}")
        ok &= rel <= tol
        worst = 0.0
        order = dumps[0][1]
        g = [gradients(d, order) for d, _, _ in dumps]
        for k in g[0]:
            expect = (g[1][k] * n[1] + g[2][k] * n[2]) / n[0]
            err = np.linalg.norm(g[0][k] - expect) / max(np.linalg.norm(expect), 1e-30)
            worst = max(worst, err)
        print(f"{len(g[0])} gradients, worst relative L2 error {worst:.3g} (tolerance {tol:g})")
        ok &= worst <= tol and len(g[0]) > 0
        print("OK" if ok else "FAIL")
        return
    sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
