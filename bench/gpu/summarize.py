#!/usr/bin/env python3
"""The table of bench/gpu/run.sh from its raw results in OUT: for each model
and shape, our bf16 and fp8 trainers and PyTorch (eager, torch.compile) in
tokens/s and model FLOPs utilization, the ratios the issue asks for, and
peak GPU memory against our plan; then the attention kernels.

MFU = tokens/s x FLOPs per token / 989 TFLOP/s (H100 SXM dense BF16), with
FLOPs per token = 6 x (parameters in GEMMs: every layer's projections and the
LM head) + 6 x layers x heads x head_dim x seq (causal attention, forward and
backward), the same formula for every column.

Usage: summarize.py OUT"""
import glob
import json
import os
import re
import statistics
import sys

out = sys.argv[1]
PEAK = 989e12


def flops_per_token(cfg, seq):
    D, H, KV = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    L, I, V = cfg["num_hidden_layers"], cfg["intermediate_size"], cfg["vocab_size"]
    hd = D // H
    gemm = L * (D * H * hd + 2 * D * KV * hd + H * hd * D + 3 * D * I) + V * D
    return 6 * gemm + 6 * L * H * hd * seq


def ours(name, recipe):
    """The median tokens/s of the logged steps after the first two, and the
    memory line."""
    path = os.path.join(out, f"ours-{name}-{recipe}.jsonl")
    if not os.path.exists(path):
        return None, ""
    tps = [json.loads(l)["tokens_per_s"] for l in open(path) if l.strip()][2:]
    log = open(os.path.join(out, f"ours-{name}-{recipe}.log")).read()
    m = re.search(r"planned ([0-9.]+) GiB on the device; the GPU holds ([0-9.]+) GiB", log)
    # (what the GPU holds includes the CUDA context, about 0.5 GiB)
    mem = f"{m.group(2)} GiB (plan {m.group(1)})" if m else ""
    return (statistics.median(tps) if tps else None), mem


def torch(name, mode):
    path = os.path.join(out, f"torch-{name}-{mode}.json")
    try:
        return json.loads(open(path).read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        return None


def fmt(tps, fpt):
    return f"{tps:,.0f} ({100 * tps * fpt / PEAK:.1f} %)" if tps else "—"


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "—"


print("| model, batch x seq | ours bf16 | ours fp8 | torch eager | torch.compile "
      "| fp8/bf16 | bf16/eager | bf16/compile | GPU memory: ours bf16, fp8; torch |")
print("|---|---|---|---|---|---|---|---|---|")
for cfg_path in sorted(glob.glob(os.path.join(out, "shape-*.json"))):
    shape = json.load(open(cfg_path))
    name, B, S = shape["name"], shape["batch"], shape["seq"]
    cfg = json.load(open(shape["config"]))
    if "layers" in shape:
        cfg["num_hidden_layers"] = shape["layers"]
    fpt = flops_per_token(cfg, S)
    (b16, m16), (f8, m8) = ours(name, "bf16"), ours(name, "fp8")
    eager, comp = torch(name, "eager"), torch(name, "compile")
    te = eager["tokens_per_s"] if eager else None
    tc = comp["tokens_per_s"] if comp else None
    tmem = f"{eager['peak_reserved_gib']} GiB" if eager else "—"
    print(f"| {name}, {B} x {S} | {fmt(b16, fpt)} | {fmt(f8, fpt)} | {fmt(te, fpt)} | "
          f"{fmt(tc, fpt)} | {ratio(f8, b16)} | {ratio(b16, te)} | {ratio(b16, tc)} | "
          f"{m16 or '—'}; {m8 or '—'}; {tmem} |")

print()
print("| attention (causal, bf16) | ours fwd ms (TFLOP/s) | ours bwd ms (TFLOP/s) "
      "| SDPA fwd ms (TFLOP/s) | SDPA bwd ms (TFLOP/s) |")
print("|---|---|---|---|---|")
rows, quantize, gemms = {}, [], []
for who, name in (("ours", "kernels-ours.jsonl"), ("ours", "attention-ours.jsonl"),
                  ("torch", "attention-torch.jsonl")):
    path = os.path.join(out, name)
    if os.path.exists(path):
        for line in open(path):
            if line.startswith("{"):
                r = json.loads(line)
                if "shape" in r:
                    rows.setdefault(r["shape"], {})[who] = r
                elif "quantize_dual" in r:
                    quantize.append(r)
                elif "gemm" in r:
                    gemms.append(r)


def cell(r, k):
    return f"{r[k + '_ms']} ({r[k + '_tflops']})" if r else "—"


for shape, r in rows.items():
    o, t = r.get("ours"), r.get("torch")
    print(f"| {shape} | {cell(o, 'forward')} | {cell(o, 'backward')} | "
          f"{cell(t, 'forward')} | {cell(t, 'backward')} |")

if quantize:
    print()
    print("| quantize_dual (1x128 / 128x128) | rows x cols | path | ms | GB/s |")
    print("|---|---|---|---|---|")
    for r in quantize:
        print(f"| {r['quantize_dual']} | {r['rows']} x {r['cols']} | {r['path']} | "
              f"{r['ms']} | {r['gb_per_s']} |")

if gemms:
    print()
    print("| GEMM (M x N x K) | out | rhs scales | bf16 ms (TFLOP/s) | fp8 ms (TFLOP/s) "
          "| fp8/bf16 speed |")
    print("|---|---|---|---|---|---|")
    for r in gemms:
        print(f"| {r['gemm']} ({r['m']} x {r['n']} x {r['k']}) | {r['out']} | "
              f"{r['rhs_scales']} | {r['bf16_ms']} ({r['bf16_tflops']}) | "
              f"{r['fp8_ms']} ({r['fp8_tflops']}) | {r['bf16_ms'] / r['fp8_ms']:.2f} |")

# The fp8 step with the three-pass quantizers (INFIR2_CUDA_QUANTIZE=passes).
before = [(p, os.path.basename(p)[len("ours-"):-len("-fp8-passes.jsonl")])
          for p in sorted(glob.glob(os.path.join(out, "ours-*-fp8-passes.jsonl")))]
if before:
    print()
    print("| fp8 quantizers | one pass per tile | three passes (atomics) | ratio |")
    print("|---|---|---|---|")
    for path, name in before:
        tps = [json.loads(l)["tokens_per_s"] for l in open(path) if l.strip()][2:]
        old = statistics.median(tps) if tps else None
        new = ours(name, "fp8")[0]
        print(f"| {name} | {new and f'{new:,.0f}' or '—'} | {old and f'{old:,.0f}' or '—'} "
              f"| {ratio(new, old)} |")

# The step-time model's predictions (predicted-NAME-RECIPE-TARGET.txt, made
# where the bundle was packed) beside the measurements, and the FP8 recipe
# with the cost model's decisions (fp8cost).
def predicted(name, recipe, target):
    path = os.path.join(out, f"predicted-{name}-{recipe}-{target}.txt")
    try:
        m = re.search(r"([0-9]+) tokens/s", open(path).read())
        return float(m.group(1)) if m else None
    except OSError:
        return None


names = [json.load(open(p))["name"] for p in sorted(glob.glob(os.path.join(out, "shape-*.json")))]
if any(predicted(n, r, "h200") for n in names for r in ("bf16", "fp8", "fp8cost")):
    print()
    print("| model | recipe | predicted tok/s (h100, h200) | measured tok/s | measured / predicted (h200) |")
    print("|---|---|---|---|---|")
    for name in names:
        for recipe in ("bf16", "fp8", "fp8cost"):
            p100, p200 = predicted(name, recipe, "h100"), predicted(name, recipe, "h200")
            got = ours(name, recipe)[0]
            if not (p200 or got):
                continue
            print(f"| {name} | {recipe} | {p100 and f'{p100:,.0f}' or '—'}, "
                  f"{p200 and f'{p200:,.0f}' or '—'} | {got and f'{got:,.0f}' or '—'} "
                  f"| {ratio(got, p200)} |")

# Where the gap between the model and the runtime is, by kind of op: the
# measured GPU time per step (INFIR2_PROFILE=gpu over 6 steps, the first one's
# start-up included) against the model's prediction for a step (h200).
KINDS = {"scaled_matmul": "GEMM fp8", "matmul": "GEMM bf16",
         "attention": "attention", "attention_grad": "attention",
         "quantize": "FP8 quantization", "quantize_dual": "FP8 quantization",
         "rms_norm_quantize_dual": "FP8 quantization and fused producers",
         "swiglu_quantize_dual": "FP8 quantization and fused producers",
         "cross_entropy": "loss", "cross_entropy_grad": "loss",
         "rms_norm": "norms", "rms_norm_grad": "norms",
         "embedding": "embedding", "embedding_grad": "embedding",
         "adamw": "optimizer", "adamw_group": "optimizer", "sgd": "optimizer",
         "global_norm": "optimizer"}


def predicted_kinds(name, recipe):
    """ms per kind of one micro-batch and the optimizer step, predicted."""
    kinds = {}
    try:
        for line in open(os.path.join(out, f"predicted-{name}-{recipe}-h200.txt")):
            m = re.match(r"\s+(\S.*?)\s+\d+\s+[0-9.]+\s+[0-9.]+\s+([0-9.]+)\s+[0-9.]+%", line)
            if m:
                kinds[m.group(1)] = kinds.get(m.group(1), 0) + float(m.group(2))
    except OSError:
        pass
    return kinds


for path in sorted(glob.glob(os.path.join(out, "profile-*.txt"))):
    name, recipe = os.path.basename(path)[len("profile-"):-len(".txt")].rsplit("-", 1)
    model = predicted_kinds(name, recipe)
    if not model:
        continue
    measured = {}
    for line in open(path):
        m = re.match(r"profile: (\w+)\s+\d+ calls\s+([0-9.]+) s", line)
        if m:
            kind = KINDS.get(m.group(1), "elementwise and copies")
            measured[kind] = measured.get(kind, 0) + float(m.group(2)) * 1e3 / 6
    print()
    print(f"| {name} {recipe}: kind | measured ms per step | predicted (h200) | measured / predicted |")
    print("|---|---|---|---|")
    for kind in sorted(set(measured) | set(model), key=lambda k: -measured.get(k, 0)):
        got, want = measured.get(kind), model.get(kind)
        print(f"| {kind} | {got and f'{got:.1f}' or '—'} | {want and f'{want:.1f}' or '—'} "
              f"| {ratio(got, want)} |")
