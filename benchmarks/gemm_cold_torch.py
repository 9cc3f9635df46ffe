"""PyTorch's side of benchmarks/gemm_cold_cpu.cpp: torch.mm (MKL's sgemm
on an Intel CPU) at the ViT's and BERT's projection shapes, and torch.bmm
at their attention's batched ones, warm (the same
operands again and again) and cold (cycling through 64 MB of operand sets,
so each call's were evicted from L2 by the calls between), in turn, round
after round. Prints the same table as gemm_cold_cpu; the two cold / warm
columns say how much each GEMM loses when its operands arrive cold, as
they do in a training step.

usage: python gemm_cold_torch.py [rounds]

Runs in a Python with torch; all cores, as torch_steps.py. Under
MP_CPU_ISA=avx2 it caps MKL and ATen to AVX2 the way torch_steps.py does.
"""

import argparse
import os
import statistics
import time

# name, batch, m, n, k, lhs transposed, rhs transposed (gemm_cold_cpu.cpp's
# list)
PRODUCTS = [
    ("vit qkv forward", 1, 520, 768, 256, False, True),
    ("vit fc1 forward", 1, 520, 1024, 256, False, True),
    ("vit fc2 forward", 1, 520, 256, 1024, False, True),
    ("vit fc1 input gradient", 1, 520, 256, 1024, False, False),
    ("vit fc1 weight gradient", 1, 1024, 256, 520, True, False),
    ("vit attention scores", 32, 65, 65, 64, False, True),
    ("vit attention output", 32, 65, 64, 65, False, False),
    ("vit attention value gradient", 32, 65, 64, 65, True, False),
    ("bert qkv forward", 1, 1024, 256, 256, False, True),
    ("bert fc1 forward", 1, 1024, 1024, 256, False, True),
    ("bert fc2 forward", 1, 1024, 256, 1024, False, True),
    ("bert fc2 input gradient", 1, 1024, 1024, 256, False, False),
    ("bert fc2 weight gradient", 1, 256, 1024, 1024, True, False),
    ("bert attention scores", 32, 128, 128, 64, False, True),
    ("bert attention output", 32, 128, 64, 128, False, False),
    ("bert attention value gradient", 32, 128, 64, 128, True, False),
]
COLD_BYTES = 64 << 20


def operands(batch, m, n, k, ta, tb):
    lhs = (torch.randn(batch, k, m).transpose(1, 2) if ta
           else torch.randn(batch, m, k))
    rhs = (torch.randn(batch, n, k).transpose(1, 2) if tb
           else torch.randn(batch, k, n))
    out = torch.empty(batch, m, n)
    if batch == 1:
        return lhs[0], rhs[0], out[0]
    return lhs, rhs, out


def multiply(lhs, rhs, out):
    """torch.mm for a matrix, torch.bmm for a batch."""
    (torch.mm if lhs.dim() == 2 else torch.bmm)(lhs, rhs, out=out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("rounds", nargs="?", type=int, default=40)
    rounds = p.parse_args().rounds
    if rounds < 1:
        p.error("rounds must be positive")
    # The caps are read when torch loads.
    if os.environ.get("MP_CPU_ISA") == "avx2":
        os.environ.setdefault("MKL_ENABLE_INSTRUCTIONS", "AVX2")
        os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
    global torch
    try:
        import torch
    except ImportError:
        p.error("needs a Python with torch (benchmarks/README.md)")
    torch.set_num_threads(os.cpu_count())
    print("| product | m x n x k | warm us | GFLOP/s | cold us | GFLOP/s "
          "| cold / warm |\n|---|---|---:|---:|---:|---:|---:|")
    for name, batch, m, n, k, ta, tb in PRODUCTS:
        size = 4 * batch * (m * k + k * n + m * n)
        cold = [operands(batch, m, n, k, ta, tb)
                for _ in range(max(2, COLD_BYTES // size))]
        warm = operands(batch, m, n, k, ta, tb)
        for i in range(3):
            multiply(*warm)
            multiply(*cold[i % len(cold)])
        warm_s, cold_s = [], []
        for r in range(rounds):
            multiply(*warm)  # back into L2
            t0 = time.perf_counter()
            multiply(*warm)
            t1 = time.perf_counter()
            multiply(*cold[r % len(cold)])
            t2 = time.perf_counter()
            warm_s.append(t1 - t0)
            cold_s.append(t2 - t1)
        flops = 2.0 * batch * m * n * k
        w, c = statistics.median(warm_s), statistics.median(cold_s)
        shape = "%dx%dx%d" % (m, n, k)
        if batch != 1:
            shape = "%d x %s" % (batch, shape)
        print("| %s | %s | %.1f | %.0f | %.1f | %.0f | %.2f |"
              % (name, shape, 1e6 * w, flops / w / 1e9, 1e6 * c,
                 flops / c / 1e9, c / w))


if __name__ == "__main__":
    main()
