#!/usr/bin/python3
"""Reads and checks Hugging Face model folders, written from the formats'
specifications (not from our C++ writer), so that the trainer's saves are
judged by an independent reader.

Usage: hf_folder.py check DIR [--expect-shards N] [--max-shard-bytes B]

As a module:
  read_safetensors(path) -> SafetensorsFile (.metadata, .entries name->Entry)
  read_folder(dir, decode=True) -> (config dict, {name: torch float64}, info)
  decode_e4m3(uint8 array) -> float64 array;  bf16_bits_to_f32, f32_to_bf16_bits

safetensors (huggingface/safetensors, "Format"): 8 bytes little-endian u64 N,
then N bytes of UTF-8 JSON beginning with '{' (may be padded with trailing
spaces), then the data. The JSON maps each tensor name to {"dtype", "shape",
"data_offsets": [BEGIN, END]} (relative to the data's start) plus an optional
"__metadata__" string->string map. Tensors are little-endian, row-major; the
byte ranges must tile the data exactly (no hole, no overlap, nothing after),
and END - BEGIN must be numel * element size.

Folder (transformers' save_pretrained / from_pretrained): config.json, and
either model.safetensors, or model.safetensors.index.json = {"metadata":
{"total_size": N}, "weight_map": {tensor: file}} with shards named
model-00001-of-0000K.safetensors (1-based, 5 digits, K = shard count). Checked
here: every mapped file exists and the files are exactly the K names; each
shard holds exactly the tensors the map gives it; no tensor twice; total_size
= sum of numel * element size; no stray shard beside them (a stale
model-*-of-*.safetensors, or a model.safetensors that from_pretrained would
load instead of the shards; other safetensors files, such as a checkpoint's
optimizer state, are ignored by loaders when there is an index, and
refused without one, where vLLM would load every *.safetensors); each file's __metadata__ has "format": "pt" (transformers refuses
other formats, and versions before 4.42 crash on a file without metadata).
--max-shard-bytes B: HF's split puts a tensor larger than B alone in its shard,
and otherwise keeps a shard's tensor bytes <= B.
Any violation raises FormatError; the CLI prints it and exits 1.
"""
import argparse
import json
import mmap
import os
import re
import struct
import sys
from collections import Counter

import numpy as np

DTYPE_SIZE = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1,
              "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
              "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
# numpy view of the stored bits (BF16 and F8 are kept as raw integers).
RAW_NUMPY = {"BOOL": "u1", "U8": "u1", "I8": "i1", "F8_E4M3": "u1", "F8_E5M2": "u1",
             "I16": "<i2", "U16": "<u2", "F16": "<f2", "BF16": "<u2",
             "I32": "<i4", "U32": "<u4", "F32": "<f4", "I64": "<i8", "U64": "<u8", "F64": "<f8"}
TORCH_DTYPE_OF = {"BF16": "bfloat16", "F16": "float16", "F32": "float32", "F64": "float64"}
SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
SHARD_RE = re.compile(r"^model-(\d{5})-of-(\d{5})\.safetensors$")


class FormatError(Exception):
    pass


def shard_name(i, n):
    """transformers' name of shard i (1-based) of n."""
    return f"model-{i:05d}-of-{n:05d}.safetensors"


# ----------------------------------------------------------------- decoding

def decode_e4m3(raw):
    """OCP FP8 E4M3FN: bit 7 sign, bits 6-3 exponent (bias 7), bits 2-0
    mantissa m. Exponent 0: subnormal m * 2^-9 (= m/8 * 2^-6). Otherwise
    (1 + m/8) * 2^(e-7). S.1111.111 (0x7F, 0xFF) is NaN; there are no
    infinities, so S.1111.110 = 1.75 * 2^8 = 448 is the largest value."""
    b = np.asarray(raw, dtype=np.uint8).astype(np.int64)
    e = (b >> 3) & 0xF
    m = (b & 7).astype(np.float64)
    mag = np.where(e == 0, np.ldexp(m, -9), np.ldexp(1.0 + m / 8.0, (e - 7).astype(np.int32)))
    val = np.where(b & 0x80, -mag, mag)
    return np.where((b & 0x7F) == 0x7F, np.nan, val)


def decode_e5m2(raw):
    """OCP FP8 E5M2 (IEEE-like): exponent bias 15, 2 mantissa bits,
    subnormals m * 2^-16, exponent 31 is inf (m = 0) or NaN."""
    b = np.asarray(raw, dtype=np.uint8).astype(np.int64)
    e = (b >> 2) & 0x1F
    m = (b & 3).astype(np.float64)
    mag = np.where(e == 0, np.ldexp(m, -16), np.ldexp(1.0 + m / 4.0, (e - 15).astype(np.int32)))
    mag = np.where(e == 31, np.where(m == 0, np.inf, np.nan), mag)
    return np.where(b & 0x80, -mag, mag)


def bf16_bits_to_f32(bits):
    """BF16 is the top half of an IEEE float32: value = bits << 16."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(x):
    """Round-to-nearest-even float32 -> BF16 bits (NaN -> quiet NaN)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    rounded = np.where(nan, (u >> 16) | 0x40, rounded)
    return rounded.astype(np.uint16)


# ----------------------------------------------------------- safetensors

class Entry:
    """One tensor of a safetensors file: dtype, shape, byte range, and its
    stored bits (raw()) or its value (to_float64())."""

    def __init__(self, path, name, dtype, shape, begin, end, buf, base):
        self.path, self.name, self.dtype, self.shape = path, name, dtype, shape
        self.begin, self.end, self._buf, self._base = begin, end, buf, base

    @property
    def nbytes(self):
        return self.end - self.begin

    @property
    def numel(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def raw(self):
        """The stored values as numpy (BF16 as uint16 bits, F8 as uint8)."""
        dt = np.dtype(RAW_NUMPY[self.dtype])
        if self.numel == 0:
            return np.zeros(self.shape, dtype=dt)
        a = np.frombuffer(self._buf, dtype=dt, count=self.numel, offset=self._base + self.begin)
        return a.reshape(self.shape)

    def to_float64(self):
        r = self.raw()
        if self.dtype == "BF16":
            return bf16_bits_to_f32(r).astype(np.float64)
        if self.dtype == "F8_E4M3":
            return decode_e4m3(r)
        if self.dtype == "F8_E5M2":
            return decode_e5m2(r)
        return r.astype(np.float64)


class SafetensorsFile:
    def __init__(self, path, metadata, entries, data_bytes):
        self.path, self.metadata, self.entries, self.data_bytes = path, metadata, entries, data_bytes


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    dup = [k for k, c in Counter(keys).items() if c > 1]
    if dup:
        raise FormatError(f"duplicate JSON key {dup[0]!r}")
    return dict(pairs)


def read_safetensors(path):
    """Parses and validates one file per the spec; the data stays mapped."""
    size = os.path.getsize(path)
    if size < 8:
        raise FormatError(f"{path}: {size} bytes, shorter than the 8-byte header length")
    with open(path, "rb") as f:
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    (n,) = struct.unpack("<Q", buf[:8])
    if 8 + n > size:
        raise FormatError(f"{path}: header length {n} runs past the end of the {size}-byte file")
    text = buf[8:8 + n]
    if not text.startswith(b"{"):
        raise FormatError(f"{path}: header does not begin with '{{'")
    try:
        header = json.loads(text.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError) as e:
        raise FormatError(f"{path}: header is not valid UTF-8 JSON: {e}")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise FormatError(f"{path}: __metadata__ must map strings to strings, got {metadata!r}")
    base, data_bytes = 8 + n, size - 8 - n
    entries = {}
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise FormatError(f"{path}: tensor {name!r}: entry must have exactly dtype, shape, data_offsets")
        dtype, shape, offs = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in DTYPE_SIZE:
            raise FormatError(f"{path}: tensor {name!r}: unknown dtype {dtype!r}")
        if not (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)):
            raise FormatError(f"{path}: tensor {name!r}: bad shape {shape!r}")
        if not (isinstance(offs, list) and len(offs) == 2 and all(isinstance(o, int) for o in offs)
                and 0 <= offs[0] <= offs[1]):
            raise FormatError(f"{path}: tensor {name!r}: bad data_offsets {offs!r}")
        want = int(np.prod(shape, dtype=np.int64)) * DTYPE_SIZE[dtype]
        if offs[1] - offs[0] != want:
            raise FormatError(f"{path}: tensor {name!r}: {offs[1] - offs[0]} bytes for {dtype} "
                              f"{shape}, which needs {want}")
        entries[name] = Entry(path, name, dtype, shape, offs[0], offs[1], buf, base)
    # The ranges must tile [0, data_bytes): sorted by (begin, end), each
    # begins where the previous ended.
    pos, prev = 0, None
    for e in sorted(entries.values(), key=lambda e: (e.begin, e.end)):
        if e.begin != pos:
            what = "overlaps" if e.begin < pos else "leaves a hole before"
            raise FormatError(f"{path}: tensor {e.name!r} at [{e.begin}, {e.end}) {what} "
                              f"the previous tensor{' ' + repr(prev) if prev else ''} ending at {pos}")
        pos, prev = e.end, e.name
    if pos != data_bytes:
        raise FormatError(f"{path}: tensors cover {pos} data bytes but the file holds {data_bytes}")
    return SafetensorsFile(path, metadata, entries, data_bytes)


# ------------------------------------------------------------------ folders

def _check_format_metadata(st):
    fmt = (st.metadata or {}).get("format")
    if fmt not in ("pt", "tf", "flax", "mlx"):
        raise FormatError(f"{st.path}: __metadata__ 'format' is {fmt!r}; transformers requires "
                          f"'pt' (save_pretrained writes {{\"format\": \"pt\"}})")


def read_folder(directory, decode=True):
    """Reads a Hugging Face model folder. Returns (config, tensors, info):
    tensors maps name -> torch float64 tensor (empty when decode=False);
    info has layout ('single' | 'sharded'), files, file_of, entries
    (name -> Entry), file_tensor_bytes, file_sizes, total_bytes, index."""
    cfg_path = os.path.join(directory, "config.json")
    if not os.path.isfile(cfg_path):
        raise FormatError(f"{directory}: no config.json")
    try:
        config = json.load(open(cfg_path))
    except ValueError as e:
        raise FormatError(f"{cfg_path}: not valid JSON: {e}")
    present = sorted(f for f in os.listdir(directory) if f.endswith(".safetensors"))
    has_index = os.path.isfile(os.path.join(directory, INDEX))
    index = None
    if has_index:
        if SINGLE in present:
            raise FormatError(f"{directory}: both {SINGLE} and {INDEX}; from_pretrained would load "
                              f"{SINGLE} and ignore the shards")
        # With an index, transformers and vLLM read only the files it names;
        # other safetensors (a checkpoint's optimizer state) are ignored,
        # unless they look like model shards, which is a stale save.
        try:
            index = json.load(open(os.path.join(directory, INDEX)))
        except ValueError as e:
            raise FormatError(f"{INDEX}: not valid JSON: {e}")
        wmap = index.get("weight_map") if isinstance(index, dict) else None
        total = (index.get("metadata") or {}).get("total_size") if isinstance(index, dict) else None
        if not isinstance(wmap, dict) or not wmap:
            raise FormatError(f"{INDEX}: no weight_map object")
        if not isinstance(total, int):
            raise FormatError(f"{INDEX}: metadata.total_size missing or not an integer: {total!r}")
        files = sorted(set(wmap.values()))
        for f in files:
            if not os.path.isfile(os.path.join(directory, f)):
                raise FormatError(f"{INDEX}: weight_map names {f!r}, which does not exist")
        k = len(files)
        expected = [shard_name(i, k) for i in range(1, k + 1)]
        if files != expected:
            bad = [f for f in files if f not in expected]
            raise FormatError(f"{INDEX}: shard files {bad or files} do not follow transformers' "
                              f"naming for {k} shards ({expected[0]} .. {expected[-1]})")
        stray = [f for f in present if f not in files and re.fullmatch(r"model-\d+-of-\d+\.safetensors", f)]
        if stray:
            raise FormatError(f"{directory}: stray safetensors files not in the index: {stray}")
    else:
        if SINGLE not in present:
            raise FormatError(f"{directory}: neither {SINGLE} nor {INDEX}")
        stray = [f for f in present if f != SINGLE]
        if stray:
            raise FormatError(f"{directory}: stray safetensors files beside {SINGLE}: {stray}")
        files, wmap = [SINGLE], None
    entries, file_of, file_tensor_bytes, file_sizes = {}, {}, {}, {}
    for f in files:
        st = read_safetensors(os.path.join(directory, f))
        _check_format_metadata(st)
        file_tensor_bytes[f] = sum(e.nbytes for e in st.entries.values())
        file_sizes[f] = os.path.getsize(os.path.join(directory, f))
        for name, e in st.entries.items():
            if name in entries:
                raise FormatError(f"tensor {name!r} is stored twice: in {file_of[name]} and {f}")
            if wmap is not None:
                if name not in wmap:
                    raise FormatError(f"{f}: tensor {name!r} is not in {INDEX}'s weight_map")
                if wmap[name] != f:
                    raise FormatError(f"tensor {name!r} is in {f} but {INDEX} maps it to {wmap[name]}")
            entries[name], file_of[name] = e, f
    if wmap is not None:
        missing = [n for n in wmap if n not in entries]
        if missing:
            raise FormatError(f"{INDEX} maps {missing[0]!r} to {wmap[missing[0]]}, which does not "
                              f"hold it ({len(missing)} missing)")
    total_bytes = sum(e.nbytes for e in entries.values())
    if index is not None and index["metadata"]["total_size"] != total_bytes:
        raise FormatError(f"{INDEX}: metadata.total_size {index['metadata']['total_size']} != "
                          f"{total_bytes}, the sum of the tensors' numel * element size")
    tensors = {}
    if decode:
        import torch
        tensors = {n: torch.from_numpy(np.ascontiguousarray(e.to_float64())) for n, e in entries.items()}
    info = {"layout": "sharded" if index is not None else "single", "files": files,
            "file_of": file_of, "entries": entries, "file_tensor_bytes": file_tensor_bytes,
            "file_sizes": file_sizes, "total_bytes": total_bytes, "index": index,
            "directory": directory}
    return config, tensors, info


def check_shards(info, expect_shards=None, max_shard_bytes=None):
    """The sharding options of the CLI; raises FormatError."""
    if expect_shards is not None and len(info["files"]) != expect_shards:
        raise FormatError(f"{len(info['files'])} safetensors files, expected {expect_shards}")
    if max_shard_bytes is not None:
        for f in info["files"]:
            held = [e for e in info["entries"].values() if info["file_of"][e.name] == f]
            b = info["file_tensor_bytes"][f]
            if b > max_shard_bytes and len(held) != 1:
                raise FormatError(f"{f}: {b} tensor bytes in {len(held)} tensors exceed "
                                  f"--max-shard-bytes {max_shard_bytes} (only a single tensor "
                                  f"larger than the limit may exceed it, alone in its shard)")


def summary(info):
    lines = [f"layout: {info['layout']}, {len(info['files'])} file(s)"]
    for f in info["files"]:
        n = sum(1 for v in info["file_of"].values() if v == f)
        lines.append(f"  {f}: {n} tensors, {info['file_tensor_bytes'][f]} tensor bytes, "
                     f"{info['file_sizes'][f]} file bytes")
    dtypes = Counter(e.dtype for e in info["entries"].values())
    lines.append(f"tensors: {len(info['entries'])}; dtypes: " +
                 ", ".join(f"{d} {c}" for d, c in sorted(dtypes.items())))
    lines.append(f"total tensor bytes: {info['total_bytes']}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description="Check a Hugging Face safetensors model folder.")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("dir")
    c.add_argument("--expect-shards", type=int)
    c.add_argument("--max-shard-bytes", type=int)
    a = p.parse_args(argv)
    try:
        _, _, info = read_folder(a.dir, decode=False)
        print(summary(info))
        check_shards(info, a.expect_shards, a.max_shard_bytes)
    except FormatError as e:
        print(f"FAIL: {e}")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
