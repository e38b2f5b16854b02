#!/usr/bin/python3
"""Self-test of the independent checkers (hf_folder.py, hf_folder_loss.py,
check_fp8_export.py), using no InfiR2 code: folders are written by a tiny
safetensors writer below (struct + numpy, per the spec), and each planted
defect must be refused with a message.

Usage: test_hf_folder_selftest.py        (prints each case; exit 1 on failure)

(a) the E4M3 decoder on all 256 bytes against known values (0x00 = 0,
    0x01 = 2^-9, 0x08 = 2^-6, 0x38 = 1, 0xB8 = -1, 0x3F = 1.875, 0x40 = 2,
    0x7E = 448), an independent enumeration of E4M3FN's positive values
    (8 subnormals k 2^-9, then (1 + m/8) 2^e for e = -6..8 without
    S.1111.111) that codes 0..0x7E must list in increasing order, sign
    symmetry, and NaN at 0x7F / 0xFF; BF16 round-to-nearest-even ties.
(b) a sharded folder read back exactly; then each defect refused: index
    naming an absent file, a tensor in the wrong shard, a wrong total_size,
    overlapping offsets, a missing tensor, a hole, trailing bytes, a badly
    named shard, a stray shard, a tensor twice, no "format" metadata, the
    --expect-shards and --max-shard-bytes options.
(c) hf_folder_loss.py on a tiny Qwen2 folder and a dump whose loss comes
    from the same forward: passes; a perturbed weight, a missing weight, a
    missing config key fail.
(d) check_fp8_export.py on an export made by the round-to-nearest-even
    quantizer below (brute force over the enumerated values): passes;
    a NaN byte, a truncating quantizer, a transposed block scale, a too-large
    scale, an FP8 embedding, a changed BF16 tensor, a missing
    quantization_config fail.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hf_folder  # noqa: E402
from hf_folder import FormatError, read_folder  # noqa: E402
from qwen_forward_vs_torch import forward  # noqa: E402

failures = []


def expect(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


# ------------------------------------------------------------- (a) E4M3

def e4m3_positive_values():
    """Independent enumeration of E4M3FN's non-negative finite values."""
    vals = [k * 2.0 ** -9 for k in range(8)]
    for e in range(-6, 9):
        for m in range(8):
            if e == 8 and m == 7:
                continue  # S.1111.111 is NaN
            vals.append((1 + m / 8) * 2.0 ** e)
    return vals


def test_e4m3():
    dec = hf_folder.decode_e4m3(np.arange(256, dtype=np.uint8))
    known = {0x00: 0.0, 0x01: 2.0 ** -9, 0x07: 7 * 2.0 ** -9, 0x08: 2.0 ** -6, 0x38: 1.0,
             0xB8: -1.0, 0x3F: 1.875, 0x40: 2.0, 0x7E: 448.0, 0xFE: -448.0, 0x30: 0.5,
             0x80: 0.0}
    expect(all(dec[k] == v for k, v in known.items()), "E4M3 known values")
    expect(np.signbit(dec[0x80]) and not np.signbit(dec[0x00]), "E4M3 0x80 is -0")
    expect(np.isnan(dec[0x7F]) and np.isnan(dec[0xFF]) and np.isnan(dec).sum() == 2,
           "E4M3 NaN exactly at 0x7F and 0xFF")
    vals = e4m3_positive_values()
    expect(len(vals) == 127 and vals == sorted(vals), "enumeration has 127 increasing values")
    expect(list(dec[:0x7F]) == vals, "codes 0x00..0x7E list the enumeration in order")
    expect(bool(np.all(np.diff(dec[:0x7F]) > 0)), "positive codes strictly increasing")
    expect(bool(np.all(dec[0x81:0xFF] == -dec[0x01:0x7F])), "sign bit negates")
    expect(np.nanmax(np.abs(dec)) == 448.0, "largest magnitude 448 (no infinities)")
    f = np.array([1.0, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1 + 2.0 ** -8 + 2.0 ** -20, -2.5,
                  np.finfo(np.float32).max, np.inf], dtype=np.float32)
    bits = hf_folder.f32_to_bf16_bits(f)
    back = hf_folder.bf16_bits_to_f32(bits)
    expect(list(back[:5]) == [1.0, 1.0, 1 + 2.0 ** -6, 1 + 2.0 ** -7, -2.5] and
           np.isinf(back[5]) and np.isinf(back[6]), "BF16 round-to-nearest-even and ties")


# ------------------------------------------------------- a tiny writer

DT = {"F32": "<f4", "F64": "<f8", "BF16": "<u2", "F8_E4M3": "u1", "I32": "<i4", "I64": "<i8"}


def st_bytes(tensors, metadata={"format": "pt"}, offsets=None, trailing=b""):
    """tensors: [(name, dtype, array of the stored type)] -> file bytes.
    offsets: {name: [begin, end]} overrides (the data is still appended)."""
    header, data = {}, b""
    for name, dtype, arr in tensors:
        raw = np.ascontiguousarray(arr, dtype=DT[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(np.shape(arr)),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    for name, offs in (offsets or {}).items():
        header[name]["data_offsets"] = offs
    if metadata is not None:
        header["__metadata__"] = metadata
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data + trailing


def nbytes(tensors):
    return sum(np.asarray(a, dtype=DT[d]).nbytes for _, d, a in tensors)


def write_folder(d, config, shards, total=None, wmap_edit=None, names=None):
    """shards: list of tensor lists; one shard -> model.safetensors."""
    os.makedirs(d, exist_ok=True)
    json.dump(config, open(os.path.join(d, "config.json"), "w"))
    k = len(shards)
    files = names or ([hf_folder.SINGLE] if k == 1 else
                      [hf_folder.shard_name(i + 1, k) for i in range(k)])
    for f, ts in zip(files, shards):
        open(os.path.join(d, f), "wb").write(st_bytes(ts))
    if k > 1:
        wmap = {n: f for f, ts in zip(files, shards) for n, _, _ in ts}
        wmap.update(wmap_edit or {})
        size = sum(nbytes(ts) for ts in shards) if total is None else total
        json.dump({"metadata": {"total_size": size}, "weight_map": wmap},
                  open(os.path.join(d, hf_folder.INDEX), "w"))


def refused(d, fragment, **kw):
    try:
        _, _, info = read_folder(d, decode=False)
        hf_folder.check_shards(info, **kw)
    except FormatError as e:
        return fragment in str(e), str(e)
    return False, "accepted"


# ----------------------------------------------------- (b) folders

def test_folders(tmp):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5)).astype(np.float32)
    b = hf_folder.f32_to_bf16_bits(rng.standard_normal((4, 2)))
    c = rng.standard_normal(7)
    ids = np.arange(6, dtype=np.int32).reshape(2, 3)
    shards = [[("a", "F32", a), ("b", "BF16", b)], [("c", "F64", c)], [("ids", "I32", ids)]]
    cfg = {"model_type": "toy"}
    good = os.path.join(tmp, "good")
    write_folder(good, cfg, shards)
    config, t, info = read_folder(good)
    expect(config == cfg and info["layout"] == "sharded" and len(info["files"]) == 3,
           "sharded folder: config and three shards")
    expect(t["a"].dtype == torch.float64 and np.array_equal(t["a"].numpy(), a.astype(np.float64))
           and np.array_equal(t["b"].numpy(), hf_folder.bf16_bits_to_f32(b).astype(np.float64))
           and np.array_equal(t["c"].numpy(), c) and np.array_equal(t["ids"].numpy(), ids),
           "sharded folder: tensors read back exactly (F32, BF16, F64, I32)")
    rc = subprocess.run([sys.executable, os.path.join(HERE, "hf_folder.py"), "check", good,
                         "--expect-shards", "3"], capture_output=True, text=True)
    expect(rc.returncode == 0 and "tensors: 4" in rc.stdout, "CLI check passes a good folder")
    single = os.path.join(tmp, "single")
    write_folder(single, cfg, [shards[0] + shards[1]])
    expect(read_folder(single)[2]["layout"] == "single", "single-file folder")

    def case(name, fragment, build, **kw):
        d = os.path.join(tmp, name)
        build(d)
        ok, msg = refused(d, fragment, **kw)
        expect(ok, f"refused: {name}: {msg}")

    case("absent-file", "does not exist", lambda d: write_folder(
        d, cfg, shards, wmap_edit={"c": hf_folder.shard_name(4, 4)}))
    case("wrong-shard", "maps it to", lambda d: write_folder(
        d, cfg, shards, wmap_edit={"a": hf_folder.shard_name(2, 3)}))
    case("total-size", "total_size", lambda d: write_folder(
        d, cfg, shards, total=nbytes(sum(shards, [])) + 4))

    def overlap(d):
        write_folder(d, cfg, shards)
        # a (60 bytes) then b (16 bytes): make b start inside a.
        open(os.path.join(d, hf_folder.shard_name(1, 3)), "wb").write(
            st_bytes(shards[0], offsets={"b": [52, 68]}, trailing=b""))
    case("overlap", "overlaps", overlap)

    def missing(d):
        write_folder(d, cfg, shards)
        open(os.path.join(d, hf_folder.shard_name(2, 3)), "wb").write(
            st_bytes([("other", "F64", c)]))
    case("missing-tensor", "not in", missing)

    def missing2(d):
        write_folder(d, cfg, shards, wmap_edit={"ghost": hf_folder.shard_name(2, 3)})
    case("mapped-but-absent", "does not hold it", missing2)

    def hole(d):
        write_folder(d, cfg, shards)
        open(os.path.join(d, hf_folder.shard_name(1, 3)), "wb").write(
            st_bytes(shards[0], offsets={"b": [64, 80]}, trailing=b"\0" * 4))
    case("hole", "hole", hole)

    def trailing(d):
        write_folder(d, cfg, shards)
        open(os.path.join(d, hf_folder.shard_name(3, 3)), "wb").write(
            st_bytes(shards[2], trailing=b"\0" * 4))
    case("trailing", "file holds", trailing)
    case("bad-name", "naming", lambda d: write_folder(
        d, cfg, shards, names=["model-1-of-3.safetensors", "model-2-of-3.safetensors",
                               "model-3-of-3.safetensors"]))

    def stray(d):
        write_folder(d, cfg, shards)
        shutil.copy(os.path.join(d, hf_folder.shard_name(1, 3)),
                    os.path.join(d, hf_folder.shard_name(1, 4)))
    case("stray-shard", "stray", stray)
    case("twice", "twice", lambda d: write_folder(
        d, cfg, [shards[0], shards[0] + shards[1]],
        wmap_edit={"a": hf_folder.shard_name(1, 2), "b": hf_folder.shard_name(1, 2)}))

    def nometa(d):
        write_folder(d, cfg, [shards[0]])
        open(os.path.join(d, hf_folder.SINGLE), "wb").write(st_bytes(shards[0], metadata=None))
    case("no-format-metadata", "format", nometa)

    def shape(d):
        write_folder(d, cfg, [shards[0]])
        blob = st_bytes(shards[0]).replace(b"[3, 5]", b"[5, 5]")
        open(os.path.join(d, hf_folder.SINGLE), "wb").write(blob)
    case("wrong-byte-count", "needs", shape)
    case("expect-shards", "expected 2", lambda d: write_folder(d, cfg, shards), expect_shards=2)
    case("max-shard-bytes", "max-shard-bytes", lambda d: write_folder(d, cfg, shards),
         max_shard_bytes=70)
    d = os.path.join(tmp, "big-alone")
    write_folder(d, cfg, [[("a", "F32", a)], [("b", "BF16", b), ("c", "F64", c)]])
    expect(refused(d, "", max_shard_bytes=72)[1] == "accepted",
           "a single tensor larger than --max-shard-bytes alone in its shard is allowed")


# ------------------------------------------------- (c), (d) the models

QCFG = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 160,
        "intermediate_size": 200, "num_hidden_layers": 1, "num_attention_heads": 5,
        "num_key_value_heads": 1, "vocab_size": 136, "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "max_position_embeddings": 64, "hidden_act": "silu"}


def tiny_qwen(seed=1):
    """BF16 bits of a random tiny Qwen2 (name -> uint16 array)."""
    sys.path.insert(0, HERE)
    from hf_folder_loss import expected_weights
    rng = np.random.default_rng(seed)
    w = {}
    for n, shape in expected_weights(QCFG).items():
        x = 1 + 0.1 * rng.standard_normal(shape) if "norm" in n else 0.05 * rng.standard_normal(shape)
        w[n] = hf_folder.f32_to_bf16_bits(x)
    return w


def write_model(d, w, cfg=QCFG, shards=2):
    items = [(n, "BF16", b) for n, b in w.items()]
    k = -(-len(items) // shards)
    write_folder(d, cfg, [items[i:i + k] for i in range(0, len(items), k)])


def run(script, *args):
    p = subprocess.run([sys.executable, os.path.join(HERE, script), *args],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def test_loss(tmp):
    w = tiny_qwen()
    d = os.path.join(tmp, "qwen")
    write_model(d, w)
    rng = np.random.default_rng(2)
    B, S = 2, 6
    ids = rng.integers(0, QCFG["vocab_size"], (B, S))
    batch = {"input.input_ids": ids, "input.targets": rng.integers(0, QCFG["vocab_size"], (B, S)),
             "input.loss_mask": (rng.random((B, S)) < 0.8).astype(np.float32),
             "input.positions": np.tile(np.arange(S), (B, 1))}
    t = {n: torch.from_numpy(hf_folder.bf16_bits_to_f32(b).astype(np.float64)) for n, b in w.items()}
    for i, k in enumerate(batch):
        t[f"arg{len(w) + i}"] = torch.from_numpy(np.asarray(batch[k], dtype=np.float64))
    loss = float(forward(QCFG, t))
    dump = os.path.join(tmp, "dump.safetensors")
    tensors = [(k, "F32", np.asarray(v, dtype=np.float32)) for k, v in batch.items()]
    # Decoy parameters in the dump must be ignored.
    tensors.append(("model.norm.weight", "F32", np.zeros(QCFG["hidden_size"], np.float32)))
    open(dump, "wb").write(st_bytes(tensors + [("output.loss", "F32", np.float32([loss * (1 + 1e-6)]))]))
    rc, out = run("hf_folder_loss.py", d, dump, "1e-5")
    expect(rc == 0 and "OK" in out, "hf_folder_loss passes the same model")
    rc, out = run("hf_folder_loss.py", os.path.join(d, "config.json"), dump, "1e-7")
    expect(rc == 1 and "relative difference" in out, "hf_folder_loss: tolerance enforced")
    w2 = dict(w)
    w2["model.layers.0.mlp.down_proj.weight"] = hf_folder.f32_to_bf16_bits(
        hf_folder.bf16_bits_to_f32(w["model.layers.0.mlp.down_proj.weight"]) * 1.5)
    write_model(os.path.join(tmp, "qwen-perturbed"), w2)
    rc, out = run("hf_folder_loss.py", os.path.join(tmp, "qwen-perturbed"), dump, "1e-5")
    expect(rc == 1 and "does not compute" in out, "hf_folder_loss: perturbed weight fails")
    w3 = {n: b for n, b in w.items() if "k_proj.bias" not in n}
    write_model(os.path.join(tmp, "qwen-missing"), w3)
    rc, out = run("hf_folder_loss.py", os.path.join(tmp, "qwen-missing"), dump, "1e-5")
    expect(rc == 1 and "missing weight model.layers.0.self_attn.k_proj.bias" in out,
           "hf_folder_loss: missing weight fails")
    cfg = {k: v for k, v in QCFG.items() if k != "rope_theta"}
    write_model(os.path.join(tmp, "qwen-cfg"), w, cfg)
    rc, out = run("hf_folder_loss.py", os.path.join(tmp, "qwen-cfg"), dump, "1e-5")
    expect(rc == 1 and "lacks 'rope_theta'" in out, "hf_folder_loss: missing config key fails")
    return w, d


def quantize(w, truncate=False, scale_mult=1.0):
    """Reference block quantizer: s = amax/448 per 128x128 block (float32),
    q = nearest E4M3 value of w/s, ties to even code (brute force)."""
    pos = np.array(e4m3_positive_values())
    r, c = w.shape
    R, C = -(-r // 128), -(-c // 128)
    s = np.zeros((R, C), np.float32)
    q = np.zeros((r, c), np.uint8)
    for bi in range(R):
        for bj in range(C):
            blk = w[bi * 128:(bi + 1) * 128, bj * 128:(bj + 1) * 128]
            s[bi, bj] = np.float32(np.abs(blk).max() / 448) * np.float32(scale_mult)
            x = np.abs(blk / np.float64(s[bi, bj])).astype(np.float32).astype(np.float64)
            dist = np.abs(x[..., None] - pos)
            if truncate:
                dist = np.where(pos <= x[..., None], dist, np.inf)
            ties = dist == dist.min(-1, keepdims=True)
            even = ties & (np.arange(127) % 2 == 0)  # ties go to the even code
            code = np.where(even.any(-1), np.argmax(even, -1), np.argmax(ties, -1))
            q[bi * 128:(bi + 1) * 128, bj * 128:(bj + 1) * 128] = code | np.where(blk < 0, 0x80, 0)
    return q, s


def write_export(d, w, fp8_names, cfg=None, edit=None, ignored=None, master=None, **qkw):
    """master: name -> float64 values quantized instead of the BF16 ones."""
    qc = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
          "weight_block_size": [128, 128]}
    if ignored:
        qc["ignored_layers"] = ignored
    cfg = dict(cfg or QCFG, quantization_config=qc)
    items = []
    for n, b in w.items():
        if n in fp8_names:
            src = master[n] if master else hf_folder.bf16_bits_to_f32(b).astype(np.float64)
            q, s = quantize(src, **qkw)
            if edit:
                q, s = edit(n, q, s)
            items += [(n, "F8_E4M3", q), (n + "_scale_inv", "F32", s)]
        else:
            items.append((n, "BF16", b))
    write_folder(d, cfg, [items[:len(items) // 2], items[len(items) // 2:]])


def test_fp8(tmp, w, src):
    lin = [n for n in w if n.endswith("_proj.weight")]
    d = os.path.join(tmp, "fp8")
    write_export(d, w, lin)
    rc, out = run("check_fp8_export.py", d, src)
    expect(rc == 0 and "OK" in out and "worst error/bound" in out, "FP8 export passes")
    print("\n".join("     " + l for l in out.splitlines() if "overall" in l or "size:" in l))

    def case(name, fragment, **kw):
        cfg = kw.pop("cfg", None)
        dd = os.path.join(tmp, "fp8-" + name)
        write_export(dd, kw.pop("w", w), kw.pop("names", lin), cfg, **kw)
        if name == "no-quant-config":
            c = json.load(open(os.path.join(dd, "config.json")))
            del c["quantization_config"]
            json.dump(c, open(os.path.join(dd, "config.json"), "w"))
        rc, out = run("check_fp8_export.py", dd, src)
        line = next((l for l in out.splitlines() if "VIOLATION" in l), out.strip()[-200:])
        expect(rc == 1 and fragment in out, f"FP8 export refused: {name}: {line.strip()[:150]}")

    def nan(n, q, s):
        q = q.copy()
        q[3, 4] = 0x7F
        return q, s
    case("nan", "NaN", edit=nan)
    case("truncating", "> bound", truncate=True)
    case("swapped-block-scales", "VIOLATION", edit=lambda n, q, s: (q, np.roll(s, 1, axis=1)))
    case("scale-too-large", "wastes", scale_mult=4.0)
    case("fp8-embedding", "must not be FP8", names=lin + ["model.embed_tokens.weight"])
    w2 = dict(w)
    n0 = "model.layers.0.self_attn.q_proj.bias"
    w2[n0] = w[n0] ^ np.uint16(1)
    case("changed-bf16", "BF16 bits", w=w2)
    case("no-quant-config", "quantization_config")
    case("bf16-linear-not-ignored", "ignored_layers",
         names=[n for n in lin if "o_proj" not in n])
    case("fused-mixed", "fused projections", names=[n for n in lin if "k_proj" not in n],
         ignored=["model.layers.0.self_attn.k_proj"])
    dd = os.path.join(tmp, "fp8-partial")
    write_export(dd, w, [n for n in lin if "o_proj" not in n],
                 ignored=["model.layers.0.self_attn.o_proj"])
    rc, out = run("check_fp8_export.py", dd, src)
    expect(rc == 0, "FP8 export with o_proj in ignored_layers passes")
    # Quantized from FP32 masters that round to the saved BF16 values.
    rng = np.random.default_rng(3)
    master = {}
    for n in lin:
        v = hf_folder.bf16_bits_to_f32(w[n]).astype(np.float64)
        m = (v * (1 + rng.uniform(-2.0 ** -9, 2.0 ** -9, v.shape))).astype(np.float32)
        assert np.array_equal(hf_folder.f32_to_bf16_bits(m), w[n])
        master[n] = m.astype(np.float64)
    dd = os.path.join(tmp, "fp8-master")
    write_export(dd, w, lin, master=master)
    rc, out = run("check_fp8_export.py", dd, src, "--from-master")
    expect(rc == 0, "FP8 export quantized from FP32 masters passes with --from-master")
    rc, out = run("check_fp8_export.py", dd, src)
    print(f"     (the same without --from-master: exit {rc}, "
          f"{next((l for l in out.splitlines() if 'overall' in l), '')[:90]})")


def main():
    tmp = tempfile.mkdtemp(prefix="hf_folder_selftest.")
    try:
        test_e4m3()
        test_folders(tmp)
        w, src = test_loss(tmp)
        test_fp8(tmp, w, src)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'FAIL' if failures else 'PASS'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
