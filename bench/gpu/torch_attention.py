#!/usr/bin/env python3
"""PyTorch's F.scaled_dot_product_attention (causal, BF16, grouped-query
through enable_gqa) at the shapes of infir2-kernel-bench, timed the same
way: CUDA events, the median of 10 calls after 3 warm-ups, forward and
forward+backward (backward = the difference). One JSON line per shape."""
import json
import statistics

import torch
import torch.nn.functional as F

SHAPES = [("qwen-110m", 8, 1024, 16, 4, 64), ("qwen2.5-0.5b", 8, 2048, 14, 2, 64),
          ("qwen2.5-7b", 2, 4096, 28, 4, 128)]


def median_ms(fn):
    times = []
    for i in range(13):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(stop))
    return statistics.median(times)


for name, B, S, H, KV, D in SHAPES:
    q = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(B, KV, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(B, KV, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16)

    def fwd():
        with torch.no_grad():
            F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    def both():
        F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True).backward(g)

    f, fb = median_ms(fwd), median_ms(both)
    flops = 4.0 * B * H * S * S * D / 2
    print(json.dumps({"shape": name, "batch": B, "seq": S, "forward_ms": round(f, 3),
                      "backward_ms": round(fb - f, 3),
                      "forward_tflops": round(flops / f * 1e-9, 1),
                      "backward_tflops": round(2.5 * flops / (fb - f) * 1e-9, 1)}), flush=True)
