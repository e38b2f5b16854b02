"""Plants a fault in the weights of a safetensors file (F32) for
infir2-bisect's test: each EDIT is NAME[ROW,COL]=VALUE (one element) or
NAME[ROW,:]=VALUE (a whole row), on a 2-D tensor.

usage: plant_outlier.py IN.safetensors OUT.safetensors EDIT...
"""
import json
import re
import struct
import sys


def main():
    src, dst, edits = sys.argv[1], sys.argv[2], sys.argv[3:]
    blob = bytearray(open(src, "rb").read())
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    for edit in edits:
        m = re.fullmatch(r"([^\[]+)\[(\d+),(\d+|:)\]=(.+)", edit)
        if not m:
            sys.exit("plant_outlier.py: %s is not NAME[ROW,COL]=VALUE" % edit)
        name, row, col, value = m.group(1), int(m.group(2)), m.group(3), float(m.group(4))
        t = header.get(name)
        if not t or t["dtype"] != "F32" or len(t["shape"]) != 2:
            sys.exit("plant_outlier.py: no 2-D F32 tensor %s in %s" % (name, src))
        cols = t["shape"][1]
        start = 8 + size + t["data_offsets"][0]
        for c in (range(cols) if col == ":" else [int(col)]):
            at = start + 4 * (row * cols + c)
            blob[at:at + 4] = struct.pack("<f", value)
    open(dst, "wb").write(bytes(blob))


if __name__ == "__main__":
    main()
