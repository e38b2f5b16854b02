#!/usr/bin/python3
"""Writes a damaged copy of a safetensors file, for the trainer's error tests.

Usage: make_bad_checkpoint.py IN OUT missing|misshaped|truncated

missing:   drops the first tensor.
misshaped: declares the first 2-D tensor with its dimensions swapped.
truncated: cuts the file in the middle of its data.
"""
import json
import struct
import sys

src, dst, how = sys.argv[1:4]
blob = open(src, "rb").read()
(n,) = struct.unpack("<Q", blob[:8])
header = json.loads(blob[8 : 8 + n])
data = blob[8 + n :]
if how == "truncated":
    open(dst, "wb").write(blob[: 8 + n + len(data) // 2])
    sys.exit(0)
names = [k for k in header if k != "__metadata__"]
if how == "missing":
    victim = names[0]
    del header[victim]
elif how == "misshaped":
    victim = next(k for k in names if len(header[k]["shape"]) == 2 and
                  header[k]["shape"][0] != header[k]["shape"][1])
    header[victim]["shape"] = header[victim]["shape"][::-1]
else:
    sys.exit(f"unknown damage '{how}'")
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + data)
print(victim)
