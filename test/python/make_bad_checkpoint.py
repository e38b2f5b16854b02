#!/usr/bin/python3
"""Writes a damaged copy of a safetensors file, for the trainer's error tests,
from the format itself (8-byte little-endian header length, JSON header, the
tensors' bytes tiling the data).

Usage: make_bad_checkpoint.py [--restamp] IN OUT missing|misshaped|truncated|trailing|extra|flip
       make_bad_checkpoint.py [--restamp] IN OUT nan PREFIX

missing:   drops the first tensor (its entry and its bytes: a well-formed file).
misshaped: declares the first 2-D tensor with its dimensions swapped.
truncated: cuts the file in the middle of its data.
trailing:  appends 4 bytes after the data.
extra:     adds an F32 tensor 'extra.weight'.
nan:       sets the first element of the first tensor named PREFIX... to NaN.
flip:      flips one bit of the last data byte (bit rot: same size, same header).
Prints the tensor it damaged, if any.

--restamp: also records OUT's new length and CRC-32 (zlib's) in the
trainer_state.json beside it, as a tool that rewrote the file consistently
would, so that the loader's own checks of the contents are what is tested.
"""
import json
import os
import struct
import sys
import zlib

args = sys.argv[1:]
restamp = args[0] == "--restamp"
if restamp:
    args = args[1:]
src, dst, how = args[:3]


def write(blob):
    open(dst, "wb").write(blob)
    if not restamp:
        return
    state_path = os.path.join(os.path.dirname(dst), "trainer_state.json")
    state = json.load(open(state_path))
    state["files"][os.path.basename(dst)] = {"bytes": len(blob), "crc32": "%08x" % zlib.crc32(blob)}
    json.dump(state, open(state_path, "w"), indent=2)


blob = open(src, "rb").read()
(n,) = struct.unpack("<Q", blob[:8])
header = json.loads(blob[8 : 8 + n])
data = bytearray(blob[8 + n :])
if how == "truncated":
    write(blob[: 8 + n + len(data) // 2])
    sys.exit(0)
if how == "flip":
    write(blob[:-1] + bytes([blob[-1] ^ 1]))
    sys.exit(0)
names = [k for k in header if k != "__metadata__"]  # in the header's order
victim = ""
if how == "missing":
    victim = min(names, key=lambda k: header[k]["data_offsets"][0])
    begin, end = header.pop(victim)["data_offsets"]
    del data[begin:end]
    for k in header:
        if k != "__metadata__" and header[k]["data_offsets"][0] >= end:
            header[k]["data_offsets"] = [o - (end - begin) for o in header[k]["data_offsets"]]
elif how == "misshaped":
    victim = next(k for k in names if len(header[k]["shape"]) == 2 and
                  header[k]["shape"][0] != header[k]["shape"][1])
    header[victim]["shape"] = header[victim]["shape"][::-1]
elif how == "trailing":
    data += b"\0\0\0\0"
elif how == "extra":
    victim = "extra.weight"
    header[victim] = {"dtype": "F32", "shape": [1], "data_offsets": [len(data), len(data) + 4]}
    data += struct.pack("<f", 1.0)
elif how == "nan":
    victim = next(k for k in names if k.startswith(args[3]))
    begin = header[victim]["data_offsets"][0]
    data[begin : begin + 4] = struct.pack("<I", 0x7FC00000)
else:
    sys.exit(f"unknown damage '{how}'")
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
write(struct.pack("<Q", len(text)) + text + bytes(data))
print(victim)
