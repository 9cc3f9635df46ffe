#!/usr/bin/env python3
"""GPU training-step benchmark: mp's CUDA backend against PyTorch.

Generates the MLP and the transformer-block steps at realistic sizes with
utils/generate-train-step.py --hand-written (MLP: 16384 rows, 1024 -> 4096 -> 4096 ->
1024; transformer: 8 x 1024 = 8192 tokens, d_model 1024, 16 heads, FFN
4096, vocabulary 8192, 2 blocks) and, in one run on one GPU, measures for
each of strict FP32 (no TF32: mp's f32 GEMMs use CUBLAS_COMPUTE_32F),
AMP-f16 and AMP-bf16:

  * step time: the median over the steps after warm-up (mp-runner replays
    the step as a CUDA graph from its third step; its step time excludes
    the batch's upload and includes reading the loss back),
  * achieved TFLOP/s: the step's GEMM FLOPs (2 M N K of every tg.matmul in
    the step, forward and backward, read from the generated file) over the
    step time,
  * activation memory: the device allocator's peak minus the bytes of the
    step's own buffers (parameters, optimizer state, batch, results).

Where `import torch` works and sees the GPU, the same models in PyTorch:
eager FP32 (TF32 off), eager autocast + GradScaler (f16) or autocast
(bf16), and torch.compile with autocast; their activation memory is the
peak during a step minus the memory allocated before it.

Targets (issue 6): AMP step >= 2.5x strict FP32; mp AMP at least as fast
as PyTorch eager autocast; activation memory of AMP <= 0.6x FP32.

usage: benchmarks/cuda_step_times.py [--build build] [--steps 40]
           [--models mlp,transformer] [--no-torch]
       benchmarks/cuda_step_times.py --smoke --backend cpu   (tiny sizes:
           checks the script itself on a machine without a GPU)
"""

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SIZES = {
    "mlp": dict(batch=16384, inputs=1024, width=4096, layers=2,
                classes=1024),
    "transformer": dict(batch=8, seq=1024, d_model=1024, heads=16,
                        ffn=4096, vocab=8192, layers=2),
}
SMOKE = {
    "mlp": dict(batch=64, inputs=32, width=64, layers=2, classes=10),
    "transformer": dict(batch=2, seq=16, d_model=32, heads=2, ffn=64,
                        vocab=50, layers=1),
}
MATMUL = re.compile(r"tg\.matmul [^:]*?(transpose_lhs)?\s*(transpose_rhs)?\s*:"
                    r" \(tensor<([0-9x]+)x\w+>, tensor<[0-9x]+x\w+>\) -> "
                    r"tensor<([0-9x]+)x\w+>")


def generate(model, size, path):
    args = [sys.executable, os.path.join(ROOT, "utils",
                                         "generate-train-step.py"), model,
            "--hand-written"]
    for k, v in size.items():
        args += ["--" + k.replace("_", "-"), str(v)]
    subprocess.run(args + ["-o", path], check=True)


def gemm_flops(path):
    """2 M N K summed over every tg.matmul of the step."""
    flops = 0
    with open(path) as f:
        for line in f:
            m = MATMUL.search(line)
            if not m:
                continue
            lhs = [int(d) for d in m.group(3).split("x")]
            out = [int(d) for d in m.group(4).split("x")]
            k = lhs[-2] if m.group(1) else lhs[-1]
            n = 1
            for d in out:
                n *= d
            flops += 2 * n * k
    return flops


def run_mp(runner, step, backend, amp, steps, rows, workdir):
    summary = os.path.join(workdir, "summary.json")
    cmd = [runner, step, "--backend=" + backend, "--amp=" + amp,
           "--steps", str(steps), "--train-samples", str(4 * rows),
           "--eval-samples", str(rows), "--no-progress", "--summary", summary]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit("mp-runner failed:\n%s\n%s" % (" ".join(cmd), out.stderr))
    with open(summary) as f:
        s = json.load(f)
    times = s["runs"][0]["step_ms"]
    warm = times[min(5, len(times) - 1):]
    # On the GPU the step's buffers come from the same allocator; on the CPU
    # they are the runner's own host memory.
    activations = s["peak_bytes"]
    if s["backend"] == "cuda":
        activations -= s["buffer_bytes"]
    return dict(ms=statistics.median(warm), activations=activations,
                backend=s["backend"])


def run_torch(model, size, mode, compiled, steps):
    """The same model in PyTorch; None when it cannot run."""
    import torch
    import torch.nn.functional as F
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda"
    g = torch.Generator(device="cpu").manual_seed(0)

    def param(*shape, scale=None):
        fan = shape[0]
        bound = scale if scale is not None else 1 / fan ** 0.5
        t = (torch.rand(*shape, generator=g) * 2 - 1) * bound
        return t.to(dev).requires_grad_()

    if model == "mlp":
        dims = [size["inputs"]] + [size["width"]] * size["layers"] + \
            [size["classes"]]
        ws = [param(a, b) for a, b in zip(dims, dims[1:])]
        bs = [torch.zeros(b, device=dev, requires_grad=True) for b in dims[1:]]
        params = ws + bs
        x = torch.randn(size["batch"], size["inputs"], device=dev)
        y = torch.randint(0, size["classes"], (size["batch"],), device=dev)

        def forward():
            h = x
            for i, (w, b) in enumerate(zip(ws, bs)):
                h = h @ w + b
                if i + 1 < len(ws):
                    h = torch.relu(h)
            return F.cross_entropy(h, y)
        opt = torch.optim.SGD(params, lr=0.01)
    else:
        B, S, D, H = size["batch"], size["seq"], size["d_model"], size["heads"]
        Fd, V, L = size["ffn"], size["vocab"], size["layers"]
        emb, pos = param(V, D, scale=0.02), param(S, D, scale=0.02)
        blocks = []
        for _ in range(L):
            blocks.append(dict(
                g1=torch.ones(D, device=dev, requires_grad=True),
                b1=torch.zeros(D, device=dev, requires_grad=True),
                wq=param(D, D), wk=param(D, D), wv=param(D, D), wo=param(D, D),
                g2=torch.ones(D, device=dev, requires_grad=True),
                b2=torch.zeros(D, device=dev, requires_grad=True),
                w1=param(D, Fd), c1=torch.zeros(Fd, device=dev,
                                                requires_grad=True),
                w2=param(Fd, D), c2=torch.zeros(D, device=dev,
                                                requires_grad=True)))
        hw, hb = param(D, V), torch.zeros(V, device=dev, requires_grad=True)
        params = [emb, pos, hw, hb] + [t for b in blocks for t in b.values()]
        tokens = torch.randint(0, V, (B, S), device=dev)
        labels = torch.roll(tokens, 1, dims=1)

        def forward():
            x = emb[tokens] + pos
            for p in blocks:
                h = F.layer_norm(x, (D,), p["g1"], p["b1"], 1e-5)

                def heads(t):
                    return t.view(B, S, H, D // H).transpose(1, 2)
                q, k, v = heads(h @ p["wq"]), heads(h @ p["wk"]), \
                    heads(h @ p["wv"])
                att = torch.softmax(q @ k.transpose(-1, -2) *
                                    (D // H) ** -0.5, dim=-1)
                ctx = (att @ v).transpose(1, 2).reshape(B, S, D)
                x = x + ctx @ p["wo"]
                h = F.layer_norm(x, (D,), p["g2"], p["b2"], 1e-5)
                x = x + F.gelu(h @ p["w1"] + p["c1"]) @ p["w2"] + p["c2"]
            logits = x @ hw + hb
            return F.cross_entropy(logits.view(-1, V), labels.view(-1))
        opt = torch.optim.Adam(params, lr=1e-3)

    dtype = {"f16": torch.float16, "bf16": torch.bfloat16}.get(mode)
    scaler = torch.amp.GradScaler("cuda", enabled=mode == "f16")
    fwd = torch.compile(forward) if compiled else forward

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype or torch.float32,
                            enabled=dtype is not None):
            loss = fwd()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), \
            torch.cuda.Event(enable_timing=True)
        start.record()
        step().item()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    peak = torch.cuda.max_memory_allocated() - before
    del opt, params
    torch.cuda.empty_cache()
    return dict(ms=statistics.median(times), activations=peak)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--models", default="mlp,transformer")
    p.add_argument("--backend", default="cuda")
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--no-torch", action="store_true")
    a = p.parse_args()
    runner = os.path.join(a.build, "bin", "mp-runner")
    info = subprocess.run([runner, "--device-info"], capture_output=True,
                          text=True).stdout
    gpu = re.search(r"GPU 0: ([^\n]+)", info)
    print("machine: %s; %s" % (gpu.group(1) if gpu else "no GPU",
                               datetime.date.today().isoformat()))
    torch_ok = False
    if not a.no_torch and a.backend == "cuda":
        try:
            import torch
            torch_ok = torch.cuda.is_available()
            print("PyTorch %s" % torch.__version__)
        except ImportError:
            print("PyTorch: not importable; its rows are left out")
    print("| model | variant | ms/step | TFLOP/s | activations MiB | speed-up "
          "over mp FP32 |")
    print("|---|---|---:|---:|---:|---:|")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in a.models.split(","):
            size = (SMOKE if a.smoke else SIZES)[model]
            step = os.path.join(tmp, model + ".mlir")
            generate(model, size, step)
            flops = gemm_flops(step)
            rows = size["batch"]
            results = {}
            for amp in ("off", "f16", "bf16"):
                results["mp " + amp] = run_mp(runner, step, a.backend, amp,
                                              a.steps, rows, tmp)
            if torch_ok:
                for label, mode, compiled in (
                        ("torch eager fp32", None, False),
                        ("torch eager autocast f16", "f16", False),
                        ("torch eager autocast bf16", "bf16", False),
                        ("torch.compile autocast bf16", "bf16", True)):
                    try:
                        results[label] = run_torch(model, size, mode,
                                                   compiled, a.steps)
                    except Exception as e:  # report, keep the other rows
                        print("%s: %s failed: %s" % (model, label, e))
            base = results["mp off"]["ms"]
            for label, r in results.items():
                print("| %s | %s | %.3f | %.1f | %.1f | %.2f |" % (
                    model, label, r["ms"], flops / (r["ms"] * 1e-3) / 1e12,
                    r["activations"] / 2**20, base / r["ms"]))
            if a.smoke:
                continue
            for amp in ("f16", "bf16"):
                mp = results["mp " + amp]
                if base / mp["ms"] < 2.5:
                    failures.append("%s %s: %.2fx FP32 (target 2.5x)"
                                    % (model, amp, base / mp["ms"]))
                fp32 = results["mp off"]["activations"]
                if fp32 and mp["activations"] > 0.6 * fp32:
                    failures.append("%s %s: activations %.2fx FP32 (target "
                                    "0.6x)" % (model, amp,
                                               mp["activations"] / fp32))
                eager = results.get("torch eager autocast " + amp)
                if eager and mp["ms"] > eager["ms"]:
                    failures.append("%s %s: %.3f ms, PyTorch eager autocast "
                                    "%.3f ms" % (model, amp, mp["ms"],
                                                 eager["ms"]))
    for f in failures:
        print("target not met: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
