#!/usr/bin/python3
"""Checks an FP8 inference export against the BF16 Hugging Face folder it
was made from, in the layout of the DeepSeek-V3 / Qwen "-FP8" releases that
vLLM and SGLang load (block-wise 128x128 E4M3 weights, one float32 inverse
scale per block, dynamic activation scaling).

Usage: check_fp8_export.py EXPORT_DIR BF16_DIR [--from-master] [--min-amax-ratio R]

Checks (both folders are read and validated by hf_folder.read_folder):
- config.json equals BF16_DIR's except for an added "quantization_config":
  {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
  "weight_block_size": [128, 128]} (plus, optionally, "ignored_layers" or
  "modules_to_not_convert"); torch_dtype (or dtype) may be "bfloat16".
- every export tensor is either (a) X.weight, 2-D, F8_E4M3, with a companion
  X.weight_scale_inv, F32, shape [ceil(out/128), ceil(in/128)], or (b) BF16
  and bit-for-bit BF16_DIR's tensor (round-to-nearest-even of it when
  BF16_DIR stores F32); nothing else; every BF16_DIR tensor is exported.
- at least one FP8 weight; the embedding, lm_head and norms are not FP8.
- vLLM builds FP8 parameters for every linear layer not listed in
  ignored_layers, and fuses q/k/v and gate/up: a projection kept in BF16
  must be listed there, and fused projections must agree (else vLLM copies
  BF16 values into an FP8 parameter and finds no scale: silent garbage).
- no FP8 byte is NaN (E4M3FN: 0x7F, 0xFF).
- each FP8 weight, dequantized on its own, w_deq[i,j] = e4m3(q[i,j]) *
  s[i//128, j//128], is within the bound below of BF16_DIR's weight w; and
  each block's max|w| <= 448 s (no saturation) and >= R s (default R = 224:
  the scale is amax/448 up to a factor 2, as power-of-two scales give;
  without this a far too large scale would pass the error bound, whose
  absolute term grows with s).

The bound. The exporter computes x' = w/s in float arithmetic, x' = x(1+d)
with x = w/s exactly and |d| <= 2^-22 (a few float32 roundings of the
division or of a reciprocal and a product), then q = RNE_E4M3(x'). E4M3
has 3 mantissa bits: for normal |x'| >= 2^-6 the spacing in [2^e, 2^(e+1))
is 2^(e-3), so round-to-nearest is within half of it, 2^(e-4) <= 2^-4 |x'|;
below 2^-6 (subnormals, m * 2^-9) the spacing is 2^-9, error <= 2^-10.
q * s is exact in float64 (4 + 24 significant bits), so
  |w_deq - w| <= s|q - x'| + s|x' - x|
             <= max(2^-4 |w|, 2^-10 s)(1 + 2^-20) + 2^-20 |w|.
--from-master: the exporter quantized the FP32 master m rather than the
saved BF16 value w = RNE_BF16(m); BF16 has 7 mantissa bits, so |m - w| <=
2^-8 |m| <= 2^-8 |w| (1 + 2^-7), added to the bound (with |m| for |w|
inside it), and the saturation check allows max|w| <= 448 s (1 + 2^-7).
Prints per FP8 tensor the worst relative error and error/bound, overall
the worst error and its bound, and the sizes of the two folders.
Exit 1 with the offending tensor, element and values on any violation.
"""
import argparse
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_folder  # noqa: E402
from hf_folder import FormatError, decode_e4m3, f32_to_bf16_bits  # noqa: E402

BLOCK = 128
QUANT = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
         "weight_block_size": [BLOCK, BLOCK]}
OPTIONAL_QUANT = ("ignored_layers", "modules_to_not_convert")
FUSED = [("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj")]
LINEAR_RE = re.compile(r"^(.*)\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)\.weight$")
SLACK = 2.0 ** -20

errors = []


def error(msg):
    print(f"  VIOLATION: {msg}")
    errors.append(msg)


def check_config(exp, src):
    exp = dict(exp)
    qc = exp.pop("quantization_config", None)
    if not isinstance(qc, dict):
        error("export config.json has no quantization_config object")
        qc = {}
    for k, v in QUANT.items():
        if qc.get(k) != v:
            error(f"quantization_config[{k!r}] is {qc.get(k)!r}, expected {v!r}")
    for k in qc:
        if k not in QUANT and k not in OPTIONAL_QUANT:
            error(f"quantization_config has unexpected key {k!r}")
    for key in ("torch_dtype", "dtype"):
        if key in exp and exp[key] == "bfloat16" and key in src:
            exp[key] = src[key]
    for k in sorted(set(exp) | set(src)):
        if exp.get(k, "<absent>") != src.get(k, "<absent>"):
            error(f"config.json differs from the BF16 folder's in {k!r}: "
                  f"{exp.get(k, '<absent>')!r} vs {src.get(k, '<absent>')!r}")
    ignored = []
    for k in OPTIONAL_QUANT:
        ignored += list(qc.get(k) or [])
    return ignored


def blocks_of(a, rows, cols):
    """Expands a per-block array to [rows, cols] (block (i//128, j//128))."""
    return np.repeat(np.repeat(a, BLOCK, axis=0), BLOCK, axis=1)[:rows, :cols]


def block_amax(w):
    r, c = w.shape
    R, C = -(-r // BLOCK), -(-c // BLOCK)
    pad = np.zeros((R * BLOCK, C * BLOCK))
    pad[:r, :c] = np.abs(w)
    return pad.reshape(R, BLOCK, C, BLOCK).max(axis=(1, 3))


def check_fp8_weight(name, q_entry, s_entry, w, from_master, min_ratio, worst):
    """Checks one FP8 weight; returns its summary line."""
    out, inn = q_entry.shape
    want = [-(-out // BLOCK), -(-inn // BLOCK)]
    if s_entry.dtype != "F32" or list(s_entry.shape) != want:
        error(f"{s_entry.name}: {s_entry.dtype} {s_entry.shape}, expected F32 {want} for a "
              f"[{out}, {inn}] weight in {BLOCK}x{BLOCK} blocks")
        return None
    raw = q_entry.raw()
    nan = np.argwhere((raw & 0x7F) == 0x7F)
    if len(nan):
        i, j = nan[0]
        error(f"{name}[{i},{j}] is NaN (byte 0x{raw[i, j]:02X}); {len(nan)} NaN bytes")
        return None
    s_blocks = s_entry.raw().astype(np.float64)
    bad = np.argwhere(~np.isfinite(s_blocks) | (s_blocks < 0))
    if len(bad):
        bi, bj = bad[0]
        error(f"{s_entry.name}[{bi},{bj}] = {s_blocks[bi, bj]!r} is not a finite non-negative scale")
        return None
    amax = block_amax(w)
    sat = 448.0 * s_blocks * ((1 + 2.0 ** -7) if from_master else (1 + SLACK))
    over = np.argwhere(amax > sat)
    if len(over):
        bi, bj = over[0]
        error(f"{name} block [{bi},{bj}]: max|w| {amax[bi, bj]:.9g} > 448 * scale_inv "
              f"{s_blocks[bi, bj]:.9g} = {448 * s_blocks[bi, bj]:.9g}: the block saturates E4M3")
        return None
    nz = amax > 0
    ratio = np.where(nz, amax / np.where(s_blocks > 0, s_blocks, 1), np.inf)
    low = np.argwhere(nz & (ratio < min_ratio))
    if len(low):
        bi, bj = low[0]
        error(f"{name} block [{bi},{bj}]: max|w| / scale_inv = {ratio[bi, bj]:.6g} < {min_ratio:g}: "
              f"the scale {s_blocks[bi, bj]:.9g} wastes E4M3's range (expected about max|w|/448 "
              f"= {amax[bi, bj] / 448:.9g})")
        return None
    s = blocks_of(s_blocks, out, inn)
    deq = decode_e4m3(raw) * s
    err = np.abs(deq - w)
    aw = np.abs(w)
    if from_master:
        am = aw * (1 + 2.0 ** -7)
        bound = np.maximum(2.0 ** -4 * am, 2.0 ** -10 * s) * (1 + SLACK) + (SLACK + 2.0 ** -8) * am
    else:
        bound = np.maximum(2.0 ** -4 * aw, 2.0 ** -10 * s) * (1 + SLACK) + SLACK * aw
    viol = np.argwhere(err > bound)
    if len(viol):
        i, j = viol[0]
        error(f"{name}[{i},{j}]: w {w[i, j]!r}, FP8 byte 0x{raw[i, j]:02X} = "
              f"{float(decode_e4m3(raw[i, j]))!r}, scale_inv {s[i, j]!r}, dequantized {deq[i, j]!r}, "
              f"error {err[i, j]:.6g} > bound {bound[i, j]:.6g} ({len(viol)} elements out of bound)")
    # Relative error over E4M3's normal range (|w/s| >= 2^-6), where it is <= 2^-4;
    # below it the absolute term rules (values may round to 0: relative error 1).
    normal = aw >= 2.0 ** -6 * s
    rel = np.where(normal, err / np.where(normal, aw, 1), 0)
    ratio_eb = np.where(bound > 0, err / np.where(bound > 0, bound, 1), np.where(err > 0, np.inf, 0))
    k = np.unravel_index(np.argmax(ratio_eb), err.shape)
    if ratio_eb[k] > worst["ratio"]:
        worst.update(ratio=float(ratio_eb[k]), err=float(err[k]), bound=float(bound[k]),
                     where=f"{name}[{k[0]},{k[1]}]")
    worst["max_err"] = max(worst["max_err"], float(err.max()))
    r = ratio[nz]
    return (f"  {name} [{out}, {inn}]: worst relative error {rel.max():.4g} (normal range), worst error/bound "
            f"{ratio_eb.max():.4f}, max|w|/scale_inv in [{r.min() if r.size else 0:.5g}, "
            f"{r.max() if r.size else 0:.5g}]")


def listed(module, ignored):
    return module in ignored or any(x and x in module for x in ignored)


def main(argv=None):
    p = argparse.ArgumentParser(description="Check a block-wise FP8 export against its BF16 folder.")
    p.add_argument("export_dir")
    p.add_argument("bf16_dir")
    p.add_argument("--from-master", action="store_true",
                   help="the exporter quantized FP32 masters, not the saved BF16 values")
    p.add_argument("--min-amax-ratio", type=float, default=224.0)
    a = p.parse_args(argv)
    try:
        ecfg, _, einfo = hf_folder.read_folder(a.export_dir, decode=False)
        scfg, _, sinfo = hf_folder.read_folder(a.bf16_dir, decode=False)
    except FormatError as e:
        print(f"FAIL: {e}")
        return 1
    E, S = einfo["entries"], sinfo["entries"]
    print(f"export: {len(E)} tensors in {len(einfo['files'])} file(s); "
          f"BF16 folder: {len(S)} tensors in {len(sinfo['files'])} file(s)")
    ignored = check_config(ecfg, scfg)

    fp8, bf16 = [], []
    for n, e in sorted(E.items()):
        if n.endswith(".weight_scale_inv"):
            w = n[: -len("_scale_inv")]
            if w not in E or E[w].dtype != "F8_E4M3":
                error(f"{n} has no F8_E4M3 companion {w}")
            continue
        if n not in S:
            error(f"export tensor {n} ({e.dtype} {e.shape}) is not in the BF16 folder")
            continue
        if e.shape != S[n].shape:
            error(f"{n}: shape {e.shape} in the export, {S[n].shape} in the BF16 folder")
            continue
        if e.dtype == "F8_E4M3":
            if not n.endswith(".weight") or len(e.shape) != 2:
                error(f"{n}: F8_E4M3 but not a 2-D .weight")
            elif n + "_scale_inv" not in E:
                error(f"{n}: F8_E4M3 without {n}_scale_inv")
            else:
                fp8.append(n)
        elif e.dtype == "BF16":
            src = S[n]
            if src.dtype == "BF16":
                want = src.raw()
            elif src.dtype == "F32":
                want = f32_to_bf16_bits(src.raw())
            else:
                error(f"{n}: the BF16 folder stores it as {src.dtype}, neither BF16 nor F32")
                continue
            diff = np.argwhere(e.raw() != want)
            if len(diff):
                idx = tuple(diff[0])
                error(f"{n}{list(idx)}: BF16 bits 0x{int(e.raw()[idx]):04X} in the export, "
                      f"0x{int(want[idx]):04X} from the BF16 folder ({len(diff)} elements differ)")
            bf16.append(n)
        else:
            error(f"{n}: dtype {e.dtype}; an export tensor must be F8_E4M3 (+ F32 scale) or BF16")
    for n in sorted(set(S) - set(E)):
        error(f"BF16 folder tensor {n} is missing from the export")

    print(f"FP8 weights ({len(fp8)}): " + ", ".join(fp8))
    print(f"BF16 tensors ({len(bf16)}): " + ", ".join(bf16))
    if not fp8:
        error("no FP8 weight in the export")
    for n in fp8:
        if "embed_tokens" in n or n.startswith("lm_head") or "norm" in n.split(".")[-2]:
            error(f"{n} must not be FP8 (embedding, lm_head and norms stay BF16)")
    status = {}
    for n in E:
        m = LINEAR_RE.match(n)
        if m:
            status[(m.group(1), m.group(2))] = E[n].dtype == "F8_E4M3"
    for (parent, proj), is_fp8 in sorted(status.items()):
        module = f"{parent}.{proj}"
        if not is_fp8 and not listed(module, ignored):
            error(f"{module} is BF16 but not in quantization_config's ignored_layers: vLLM would "
                  f"load it into an FP8 parameter")
        if is_fp8 and listed(module, ignored):
            error(f"{module} is FP8 but listed in ignored_layers")
    for group in FUSED:
        for parent in sorted({p for p, _ in status}):
            st = {g: status.get((parent, g)) for g in group}
            if len({v for v in st.values() if v is not None}) > 1:
                error(f"{parent}: fused projections {st} mix FP8 and BF16 (vLLM fuses them)")

    worst = {"ratio": 0.0, "err": 0.0, "bound": 0.0, "where": "-", "max_err": 0.0}
    print("FP8 weights against the BF16 folder:")
    for n in fp8:
        line = check_fp8_weight(n, E[n], E[n + "_scale_inv"], S[n].to_float64(),
                                a.from_master, a.min_amax_ratio, worst)
        if line:
            print(line)
    print(f"overall: max |w_deq - w| = {worst['max_err']:.6g}; worst error/bound {worst['ratio']:.4f} "
          f"at {worst['where']} (error {worst['err']:.6g}, bound {worst['bound']:.6g}); bound = "
          f"max(2^-4 |w|, 2^-10 s)(1+2^-20) + 2^-20 |w|" + (" + BF16 master slack" if a.from_master else ""))
    esize, ssize = sum(einfo["file_sizes"].values()), sum(sinfo["file_sizes"].values())
    print(f"size: export {esize} bytes, BF16 folder {ssize} bytes, ratio {esize / ssize:.3f}")
    if errors:
        print(f"FAIL: {len(errors)} violation(s); first: {errors[0]}")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
