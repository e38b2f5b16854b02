#!/usr/bin/python3
"""Writes a copy of a Hugging Face model folder whose 2-D projection weights
have a different magnitude in every 128x128 block, so that an FP8 export of
it has a different scale per block and a scale applied to the wrong block
shows (random initialization gives every block nearly the same amax, hence
the same power-of-two scale).

Usage: scale_blocks.py SRC_DIR DST_DIR

Block (r, c) of each *_proj.weight is multiplied by 2^(2r + 5c) * (1 + 0.3 r)
(exact in BF16 up to one rounding); the result is stored as BF16 in one
model.safetensors with "format": "pt" metadata, beside SRC_DIR's config.json.
The reader is hf_folder.read_folder; the writer follows the safetensors
specification (8-byte header length, JSON header, data).
"""
import json
import os
import shutil
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from hf_folder import f32_to_bf16_bits, read_folder  # noqa: E402


def main():
    src, dst = sys.argv[1:3]
    _, tensors, _ = read_folder(src)
    os.makedirs(dst, exist_ok=True)
    shutil.copy(os.path.join(src, "config.json"), os.path.join(dst, "config.json"))
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        w = tensors[name].numpy().astype(np.float64)
        if w.ndim == 2 and name.endswith("_proj.weight"):
            for r in range(0, w.shape[0], 128):
                for c in range(0, w.shape[1], 128):
                    w[r:r + 128, c:c + 128] *= 2.0 ** (2 * (r // 128) + 5 * (c // 128)) * (1 + 0.3 * (r // 128))
        bits = np.asarray(f32_to_bf16_bits(w.astype(np.float32)), dtype="<u2").tobytes()
        header[name] = {"dtype": "BF16", "shape": list(w.shape), "data_offsets": [offset, offset + len(bits)]}
        blobs.append(bits)
        offset += len(bits)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for b in blobs:
            f.write(b)
    print(f"wrote {len(tensors)} tensors to {dst}")


if __name__ == "__main__":
    main()
