#!/usr/bin/python3
"""Checks a trainer's greedy generation token for token against PyTorch.

Usage: generate_vs_torch.py MODEL_DIR GENERATE.jsonl

MODEL_DIR: the Hugging Face folder the trainer generated from (read by the
independent reader hf_folder.read_folder: config.json and the weights,
nothing of ours). GENERATE.jsonl: the record `trainer --generate
--log-jsonl` wrote: prompt_ids, generated_ids, stop.

PyTorch side: the float64 Qwen2/Llama forward of qwen_forward_vs_torch
(Hugging Face semantics), run greedily WITHOUT a key/value cache: at each
step the whole sequence so far is recomputed and the argmax of the last
position's logits (the lowest id among equal ones, as torch.argmax) is the
next token. So the trainer's compiled cache (cache_write, cache_attention,
one token at a time) is checked against plain causal attention.

Every generated token must be PyTorch's, and at every step the trainer's
logit of it and its log-normalizer (logsumexp of the logits) must equal
PyTorch's within MAX_ABS = 1e-4 (an FP32 forward of a small model from the
same weights differs from float64 by ~1e-6 here; a wrong cache row, a wrong
position or a key seen too many or too few shows as 1e-2 or more). The trainer computes in FP32 (or
BF16) where this side computes in float64, so a step whose top two logits
are closer than that rounding could legitimately flip; the smallest margin
seen is printed so that a failure can be told apart from such a tie (none
is tolerated: the test's model and prompt are fixed). A stop at an
end-of-turn token is the last generated id; it must be PyTorch's argmax too.
Exit 1 on a mismatch.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_folder  # noqa: E402
from qwen_forward_vs_torch import forward_logits  # noqa: E402

MAX_ABS = 1e-4


def main():
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1])
        sys.exit(2)
    folder, record_path = sys.argv[1], sys.argv[2]
    cfg, weights, _ = hf_folder.read_folder(folder)
    with open(record_path, encoding="utf-8") as f:
        record = json.loads(f.readline())
    prompt, generated = record["prompt_ids"], record["generated_ids"]
    if not prompt or not generated:
        print("FAIL: the record has no prompt or no generated tokens")
        sys.exit(1)
    t = dict(weights)
    ids = list(prompt)
    smallest, worst = float("inf"), 0.0
    with torch.no_grad():
        for i, token in enumerate(generated):
            x = torch.tensor([ids], dtype=torch.long)
            pos = torch.arange(len(ids), dtype=torch.float64)[None]
            last = forward_logits(cfg, t, x, pos)[0, -1]
            top2 = torch.topk(last, 2)
            want = int(torch.argmax(last))
            margin = float(top2.values[0] - top2.values[1])
            smallest = min(smallest, margin)
            if token != want:
                print(f"FAIL: new token {i}: trainer {token}, PyTorch {want} "
                      f"(PyTorch's top-2 margin {margin:.3g}, logits "
                      f"{float(last[want]):.6g} vs {float(last[token]):.6g})")
                sys.exit(1)
            worst = max(worst, abs(record["chosen_logits"][i] - float(last[token])),
                        abs(record["log_normalizers"][i] - float(torch.logsumexp(last, 0))))
            if worst > MAX_ABS:
                print(f"FAIL: new token {i}: the trainer's logits differ from PyTorch's by "
                      f"{worst:.3g} (bound {MAX_ABS:g})")
                sys.exit(1)
            ids.append(token)
    print(f"{len(generated)} greedy tokens after a {len(prompt)}-token prompt "
          f"match PyTorch (smallest top-2 margin {smallest:.3g}, logits within "
          f"{worst:.2g}); "
          f"stop: {record['stop']}")
    print("OK")


if __name__ == "__main__":
    main()
