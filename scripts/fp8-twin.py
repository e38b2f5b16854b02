#!/usr/bin/python3
"""Writes the BF16 twin of an FP8 inference export: every F8_E4M3 weight
dequantized with its 128x128 block scales (w = e4m3(q) * weight_scale_inv),
every other tensor as it is, in a Hugging Face folder a trainer --load's
(config.json without quantization_config, one model.safetensors, the
tokenizer files). It is what an FP8 inference engine computes with: the
exported weights, not the trained ones.

Usage: fp8-twin.py EXPORT_DIR OUT_DIR

Reads the export with test/python/hf_folder.py (the independent reader and
E4M3 decoder the export's tests use).
"""
import json
import os
import shutil
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "python"))
import hf_folder  # noqa: E402


def main():
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1])
        sys.exit(2)
    src, out = sys.argv[1], sys.argv[2]
    cfg, _, info = hf_folder.read_folder(src, decode=False)
    entries = info["entries"]
    tensors = {}
    for name, e in sorted(entries.items()):
        if name.endswith("_scale_inv"):
            continue
        w = e.to_float64()
        if e.dtype == "F8_E4M3":
            s = entries[name + "_scale_inv"].to_float64()
            rows, cols = w.shape
            w = w * np.repeat(np.repeat(s, 128, 0), 128, 1)[:rows, :cols]
        tensors[name] = hf_folder.f32_to_bf16_bits(w.astype(np.float32))
    cfg.pop("quantization_config", None)
    cfg["torch_dtype"] = "bfloat16"
    os.makedirs(out, exist_ok=False)
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, bits in tensors.items():
        header[name] = {"dtype": "BF16", "shape": list(bits.shape),
                        "data_offsets": [offset, offset + bits.nbytes]}
        offset += bits.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for bits in tensors.values():
            f.write(np.ascontiguousarray(bits).tobytes())
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    for name in os.listdir(src):
        if name.startswith("tokenizer") or name in ("generation_config.json", "vocab.json", "merges.txt"):
            shutil.copy(os.path.join(src, name), out)
    n8 = sum(1 for e in entries.values() if e.dtype == "F8_E4M3")
    print(f"fp8-twin: {n8} FP8 weights dequantized, {len(tensors)} tensors in {out}")


if __name__ == "__main__":
    main()
