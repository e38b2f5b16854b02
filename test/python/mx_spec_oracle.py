#!/usr/bin/python3
"""MXFP8 quantization written from the OCP Microscaling Formats (MX)
specification v1.0, independently of InfiR2's code: exact rational
arithmetic (fractions.Fraction), the FP8 element values enumerated from the
formats' definitions (section 5.3: E4M3 bias 7, no infinities, S.1111.111
NaN, largest 448; E5M2 bias 15, IEEE-like, largest 57344), round to nearest
with ties to the even code, saturation to the largest normal, and one
E8M0 scale per k = 32 elements (section 5.4: 2^(code - 127), code 255 NaN).

Two scale rules:
- floor: the specification's conversion (section 6.3),
  X = 2^(floor(log2(amax)) - emax_elem), emax_elem 8 (E4M3) or 15 (E5M2);
  the block's largest values may then saturate;
- rceil: X = 2^ceil(log2(amax / max_elem)), the smallest power of two that
  saturates nothing (TransformerEngine's MXFP8 rule, InfiR2's `pow2`).
Both with InfiR2's two documented conventions, which the specification
leaves open: a block whose amax is 0 gets X = 1, and an amax below 1e-12
(as FP32) is taken as 1e-12.

usage:
  mx_spec_oracle.py make-inputs OUT.safetensors ROWS COLS SEED
      writes arg0, an F32 [ROWS, COLS] tensor (COLS a multiple of 32) whose
      blocks of 32 along the rows span 10^-14 .. 10^30 and hold the hard
      cases: zero blocks, exact ties between FP8 codes, amax exactly
      max_elem times a power of two and one FP32 step above it, values
      that round to FP8 subnormals and below them, negative zeros.
  mx_spec_oracle.py check DUMP.safetensors FORMAT RULE
      checks the dump of `infir2-run` on a function returning (data, scale)
      of `fp8.quantize %arg0 to FORMAT by #fp8.mx<dim = 1>`: every FP8
      value and every scale equal to the specification's; prints OK.
"""
import json
import math
import os
import random
import struct
import sys
from bisect import bisect_left
from fractions import Fraction

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_folder import read_safetensors  # noqa: E402  (the spec reader)

K = 32  # elements per MX block (section 5.2)
FORMATS = {
    # name: (exponent bits, mantissa bits, bias, emax_elem, max_elem)
    "e4m3": (4, 3, 7, 8, Fraction(448)),
    "e5m2": (5, 2, 15, 15, Fraction(57344)),
}
AMAX_FLOOR = Fraction(struct.unpack("<f", struct.pack("<f", 1e-12))[0])


def element_values(fmt):
    """(value, code) of every finite non-negative code, by value."""
    ebits, mbits, bias, _, max_elem = FORMATS[fmt]
    out = []
    for e in range(1 << ebits):
        for m in range(1 << mbits):
            if e == 0:  # subnormal: m * 2^(1 - bias - mbits)
                v = Fraction(m, 1 << mbits) * Fraction(2) ** (1 - bias)
            else:
                v = (1 + Fraction(m, 1 << mbits)) * Fraction(2) ** (e - bias)
            if v <= max_elem:  # E4M3's S.1111.111 and E5M2's top exponent
                out.append((v, (e << mbits) | m))
    return out


def quantize_element(x, table):
    """x (a Fraction) to the nearest element value, ties to the even code,
    saturating at the largest: returns the value."""
    a = abs(x)
    values = [v for v, _ in table]
    if a >= values[-1]:
        r = values[-1]
    else:
        i = bisect_left(values, a)
        if values[i] == a:
            r = a
        else:
            lo, hi = table[i - 1], table[i]
            dlo, dhi = a - lo[0], hi[0] - a
            if dlo < dhi or (dlo == dhi and lo[1] % 2 == 0):
                r = lo[0]
            else:
                r = hi[0]
    return -r if x < 0 else r


def floor_log2(q):
    """floor(log2(q)) for a positive Fraction, exactly."""
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    return e


def scale_exponent(amax, fmt, rule):
    _, _, _, emax_elem, max_elem = FORMATS[fmt]
    if amax == 0:
        return 0
    amax = max(amax, AMAX_FLOOR)
    if rule == "floor":
        e = floor_log2(amax) - emax_elem
    else:  # rceil: the smallest 2^e with amax / 2^e <= max_elem
        q = amax / max_elem
        e = floor_log2(q)
        if Fraction(2) ** e < q:
            e += 1
    return max(-127, min(127, e))  # E8M0 holds 2^-127 .. 2^127


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def make_inputs(path, rows, cols, seed):
    print(f"mx_spec_oracle: seed {seed}")
    rng = random.Random(seed)
    tables = [element_values("e4m3"), element_values("e5m2")]
    data = []
    for r in range(rows):
        for b in range(cols // K):
            kind = (r * (cols // K) + b) % 8
            mag = 10.0 ** rng.uniform(-14, 30)
            block = [f32(rng.gauss(0, 1) * mag) for _ in range(K)]
            if kind == 1:  # all zeros, one a negative zero
                block = [0.0] * K
                block[3] = -0.0
            elif kind in (2, 3):
                # amax exactly 448 * 2^j (X = 2^j under rceil, nothing rounds
                # up), or one FP32 step above it (X doubles); the rest well
                # below it, so that it is the amax.
                j = rng.randint(-40, 40)
                block = [f32(rng.gauss(0, 1) * math.ldexp(10.0, j)) for _ in range(K)]
                top = 0x43E00000 if kind == 2 else 0x43E00001  # 448, next float
                block[rng.randrange(K)] = math.ldexp(
                    struct.unpack("<f", struct.pack("<I", top))[0], j)
            elif kind == 4:  # exact ties between codes of E4M3 (even rows)
                # or E5M2 (odd rows), scaled by 2^j with the format's largest
                # value as the amax, so that X = 2^j and each value / X is
                # a tie
                table = tables[r % 2]
                j = rng.randint(-30, 30)
                block[0] = math.ldexp(float(table[-1][0]), j)
                for i in range(1, K):
                    t = rng.randrange(1, len(table) - 1)
                    mid = (table[t][0] + table[t + 1][0]) / 2
                    block[i] = math.ldexp(float(mid), j) * rng.choice([1, -1])
            elif kind == 5:  # a large outlier: the rest round to subnormals or 0
                block[rng.randrange(K)] = f32(mag * 3e4)
            elif kind == 6:  # an amax below the 1e-12 floor
                block = [f32(v / mag * 1e-13) for v in block]
            data.extend(block)
    raw = struct.pack(f"<{len(data)}f", *data)
    header = {"arg0": {"dtype": "F32", "shape": [rows, cols],
                       "data_offsets": [0, len(raw)]}}
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + raw)


def check(path, fmt, rule):
    t = {n: e.to_float64() for n, e in read_safetensors(path).entries.items()}
    x, data, scale = t["arg0"], t["result0"], t["result1"]
    rows, cols = x.shape
    if data.shape != x.shape or scale.shape != (rows, cols // K):
        sys.exit(f"FAIL: shapes {data.shape}, {scale.shape} for input {x.shape}")
    table = element_values(fmt)
    bad_scales = bad_values = saturated = 0
    for r in range(rows):
        for b in range(cols // K):
            block = [Fraction(float(v)) for v in x[r, b * K:(b + 1) * K]]
            e = scale_exponent(max(abs(v) for v in block), fmt, rule)
            X = Fraction(2) ** e
            if Fraction(float(scale[r, b])) != X:
                bad_scales += 1
                if bad_scales <= 5:
                    print(f"  scale [{r}, {b}]: {scale[r, b]!r}, the "
                          f"specification's 2^{e}")
            for i, v in enumerate(block):
                want = quantize_element(v / X, table)
                saturated += abs(v / X) > table[-1][0]
                got = Fraction(float(data[r, b * K + i]))
                if got != want:
                    bad_values += 1
                    if bad_values <= 5:
                        print(f"  data [{r}, {b * K + i}] of {float(v)!r}: "
                              f"{float(got)!r}, the specification's "
                              f"{float(want)!r}")
    print(f"{rows * cols} values in {rows * cols // K} blocks, {saturated} "
          f"saturated: {bad_values} values and {bad_scales} scales differ")
    if bad_values or bad_scales:
        sys.exit("FAIL")
    print("OK")


def main(argv):
    if len(argv) == 6 and argv[1] == "make-inputs":
        rows, cols = int(argv[3]), int(argv[4])
        if cols % K:
            sys.exit(f"COLS must be a multiple of {K}")
        make_inputs(argv[2], rows, cols, int(argv[5]))
    elif len(argv) == 5 and argv[1] == "check" and argv[3] in FORMATS \
            and argv[4] in ("floor", "rceil"):
        check(argv[2], argv[3], argv[4])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
