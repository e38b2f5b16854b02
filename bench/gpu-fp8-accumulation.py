"""How exactly a Hopper GPU sums FP8 products, measured without our code.

PyTorch's torch._scaled_mm (cuBLASLt's FP8 GEMM) on E4M3 operands against
the exact FP64 product of the same dequantized values. Prints, per K and
per mode, the worst |error| / sum|a*b| over all elements: FP32
accumulation gives about K * 2^-24 at worst, far less on average; a number
near 2^-14 means products are summed with fewer bits. Our CUDA GEMM test
states its bound from this.

    python3 bench/gpu-fp8-accumulation.py [SEED]   (needs a Hopper GPU)
"""
import sys

import torch

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1234
print(f"seed {seed}; {torch.cuda.get_device_name()}; torch {torch.__version__}")
g = torch.Generator().manual_seed(seed)
M, N = 256, 384
for K in (128, 512, 4096):
    a = torch.randn(M, K, generator=g, dtype=torch.float64)
    b = torch.randn(N, K, generator=g, dtype=torch.float64)
    for mode in ("tensorwise", "rowwise"):
        if mode == "tensorwise":
            sa = (a.abs().max() / 448).reshape(()).float()
            sb = (b.abs().max() / 448).reshape(()).float()
        else:
            sa = (a.abs().amax(1, keepdim=True) / 448).float()
            sb = (b.abs().amax(1, keepdim=True) / 448).float().t()
        a8 = (a / sa.double()).to(torch.float8_e4m3fn)
        b8 = (b / (sb.double().t() if mode == "rowwise" else sb.double())).to(
            torch.float8_e4m3fn)
        da = a8.double() * sa.double()
        db = b8.double() * (sb.double().t() if mode == "rowwise" else sb.double())
        exact = da @ db.t()
        magnitude = da.abs() @ db.abs().t()
        for fast in (False, True):
            try:
                out = torch._scaled_mm(a8.cuda(), b8.cuda().t(),
                                       scale_a=sa.cuda(), scale_b=sb.cuda(),
                                       out_dtype=torch.float32,
                                       use_fast_accum=fast).double().cpu()
            except Exception as e:  # a mode this build lacks
                print(f"K {K:5d} {mode:10s} fast_accum={fast}: {e}".splitlines()[0])
                continue
            worst = ((out - exact).abs() / magnitude).max().item()
            print(f"K {K:5d} {mode:10s} fast_accum={str(fast):5s} "
                  f"worst |error|/sum|ab| = {worst:.3g} (2^{torch.tensor(worst).log2().item():.1f})")
print("ok")
