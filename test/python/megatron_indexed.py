#!/usr/bin/python3
"""An independent reader and writer of Megatron-LM's indexed datasets
(prefix.bin + prefix.idx), written from the format as Megatron-LM's
megatron/core/datasets/indexed_dataset.py defines it, not from InfiR2's code:

  .idx: b"MMIDIDX\\x00\\x00", u64 version 1, u8 dtype code, u64 sequence count
        S, u64 document-index count D, S x i32 sequence lengths, S x i64 byte
        pointers into .bin, D x i64 document indices (0 first, S last)
  .bin: the sequences' elements back to back, little-endian

dtype codes: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64,
7 float32, 8 uint16.

Usage:
  megatron_indexed.py write PREFIX DTYPE DOCS.json   DOCS: [[id, ...], ...]
  megatron_indexed.py write-bytes PREFIX DTYPE FILE [--whole]
                      FILE's paragraphs (split at blank lines; with --whole,
                      the whole file) as documents of byte values
  megatron_indexed.py write-mask PREFIX ones|alternate
                      PREFIX.mask: uint8, PREFIX's documents, all 1 or 0 1 0 1 ...
  megatron_indexed.py read PREFIX                    prints a JSON summary
                      {"dtype": ..., "documents": [[...], ...]}
"""
import json
import struct
import sys

CODES = {"uint8": (1, "B"), "int8": (2, "b"), "int16": (3, "h"), "int32": (4, "i"),
         "int64": (5, "q"), "float64": (6, "d"), "float32": (7, "f"), "uint16": (8, "H")}
BY_CODE = {code: (name, fmt) for name, (code, fmt) in CODES.items()}


def write(prefix, dtype, docs):
    code, fmt = CODES[dtype]
    size = struct.calcsize("<" + fmt)
    with open(prefix + ".bin", "wb") as f:
        for d in docs:
            f.write(struct.pack("<%d%s" % (len(d), fmt), *d))
    pointers, at = [], 0
    for d in docs:
        pointers.append(at)
        at += len(d) * size
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00")
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", code))
        f.write(struct.pack("<Q", len(docs)))
        f.write(struct.pack("<Q", len(docs) + 1))
        f.write(struct.pack("<%di" % len(docs), *[len(d) for d in docs]))
        f.write(struct.pack("<%dq" % len(docs), *pointers))
        f.write(struct.pack("<%dq" % (len(docs) + 1), *range(len(docs) + 1)))


def read(prefix):
    idx = open(prefix + ".idx", "rb").read()
    assert idx[:9] == b"MMIDIDX\x00\x00", "bad magic"
    (version,) = struct.unpack_from("<Q", idx, 9)
    assert version == 1, "bad version"
    code = idx[17]
    s, d = struct.unpack_from("<QQ", idx, 18)
    lengths = struct.unpack_from("<%di" % s, idx, 34)
    pointers = struct.unpack_from("<%dq" % s, idx, 34 + 4 * s)
    doc_index = struct.unpack_from("<%dq" % d, idx, 34 + 12 * s)
    assert len(idx) == 34 + 12 * s + 8 * d, "index size"
    name, fmt = BY_CODE[code]
    size = struct.calcsize("<" + fmt)
    data = open(prefix + ".bin", "rb").read()
    seqs = [list(struct.unpack_from("<%d%s" % (n, fmt), data, p)) for n, p in zip(lengths, pointers)]
    assert sum(lengths) * size == len(data), "data size"
    docs = [sum(seqs[doc_index[k]:doc_index[k + 1]], []) for k in range(d - 1)]
    return {"dtype": name, "sequences": s, "documents": docs}


def main():
    cmd = sys.argv[1]
    if cmd == "write":
        write(sys.argv[2], sys.argv[3], json.load(open(sys.argv[4])))
    elif cmd == "write-bytes":
        text = open(sys.argv[4], "rb").read()
        parts = [text] if sys.argv[5:] == ["--whole"] else text.split(b"\n\n")
        write(sys.argv[2], sys.argv[3], [list(p) for p in parts if p])
    elif cmd == "write-mask":
        docs = read(sys.argv[2])["documents"]
        ones = sys.argv[3] == "ones"
        write(sys.argv[2] + ".mask", "uint8", [[1 if ones else i % 2 for i in range(len(d))] for d in docs])
    elif cmd == "read":
        print(json.dumps(read(sys.argv[2])))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
