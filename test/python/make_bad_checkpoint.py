#!/usr/bin/python3
"""Writes a damaged copy of a safetensors file, for the trainer's error tests,
from the format itself (8-byte little-endian header length, JSON header, the
tensors' bytes tiling the data).

Usage: make_bad_checkpoint.py IN OUT missing|misshaped|truncated|trailing|extra
       make_bad_checkpoint.py IN OUT nan PREFIX

missing:   drops the first tensor (its entry and its bytes: a well-formed file).
misshaped: declares the first 2-D tensor with its dimensions swapped.
truncated: cuts the file in the middle of its data.
trailing:  appends 4 bytes after the data.
extra:     adds an F32 tensor 'extra.weight'.
nan:       sets the first element of the first tensor named PREFIX... to NaN.
Prints the tensor it damaged, if any.
"""
import json
import struct
import sys

src, dst, how = sys.argv[1:4]
blob = open(src, "rb").read()
(n,) = struct.unpack("<Q", blob[:8])
header = json.loads(blob[8 : 8 + n])
data = bytearray(blob[8 + n :])
if how == "truncated":
    open(dst, "wb").write(blob[: 8 + n + len(data) // 2])
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
    victim = next(k for k in names if k.startswith(sys.argv[4]))
    begin = header[victim]["data_offsets"][0]
    data[begin : begin + 4] = struct.pack("<I", 0x7FC00000)
else:
    sys.exit(f"unknown damage '{how}'")
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + bytes(data))
print(victim)
