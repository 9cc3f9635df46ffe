#!/usr/bin/env python3
"""CPU training steps of transformers and CNNs: mp against PyTorch eager.

In one invocation, on this machine, for each model:

  * the model built with transformers or torchvision (random weights),
    exported to ONNX as docs/Importing.md says, and trained by mp-runner on
    the CPU backend with --amp=off and --amp=bf16 (SGD; synthetic tokens
    with padded masks, or synthetic images); the image models also with
    --layout=off (NCHW convolutions, as exported) besides the default
    (tg-assign-layout: NHWC);
  * the same model trained by PyTorch in eager mode, all cores, in fp32 and
    under torch.autocast("cpu", torch.bfloat16) (benchmarks/torch_steps.py:
    the same batch, the same cross-entropy and SGD).

torch, torchvision and transformers come from PyPI into a virtual
environment this script makes (build/torch-venv), or from the Python given
with --python.

Models (sizes with --seq, --hidden, --layers; --quick for a smoke run):
  bert   BertForSequenceClassification: 3 labels, batch 8, seq 128,
         hidden 256, 4 layers, 4 heads, vocabulary 1000
  gpt2   GPT2LMHeadModel, the same sizes, a label per token
  resnet50  torchvision's ResNet-50, 10 classes, batch 8, 64x64 images
            (--image)
  vit    torchvision's VisionTransformer, patch 8, 64x64 images, hidden
         256, 4 layers, 4 heads, 10 classes

Reports min and median ms per step (the first, warm-up, step left out) and
each variant's median over mp FP32's in the same run. With --rounds N, the
variants of a model run N times in turn (A B C, A B C, ...) and each row
pools its steps from all rounds: a slow spell of the machine then falls on
every variant instead of on one. Timings depend on the
machine: compare only within one run. MP_CPU_ISA=avx2 DNNL_MAX_CPU_ISA=AVX2
in the environment makes mp use its AVX2 kernels on an AVX-512 machine;
PyTorch's own oneDNN reads DNNL_MAX_CPU_ISA too, and torch_steps.py caps
MKL's GEMMs and ATen's vector kernels to AVX2 as well
(MKL_ENABLE_INSTRUCTIONS, ATEN_CPU_CAPABILITY).

usage: benchmarks/torch_cpu_steps.py [--build build] [--python PY]
                                     [--models bert,gpt2,resnet50,vit]
                                     [--steps 12] [--rounds 1] [--quick]
                                     [--batch B]
                                     [--seq T] [--hidden H] [--layers L]
                                     [--heads N] [--vocab V] [--image S]
                                     [--mp-flag=--fold-transposes=false]
"""

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HELPER = os.path.join(ROOT, "benchmarks", "torch_steps.py")


def torch_python(build, given):
    """A Python with torch and transformers; (None, why) if none."""
    check = ["-c", "import torch, torchvision, transformers, onnx"]
    if given:
        ok = subprocess.run([given] + check, capture_output=True)
        return (given, None) if ok.returncode == 0 else (
            None, given + " lacks torch, torchvision, transformers or onnx")
    venv = os.path.join(build, "torch-venv")
    python = os.path.join(venv, "bin", "python")
    if os.path.exists(python) and subprocess.run(
            [python] + check, capture_output=True).returncode == 0:
        return python, None
    made = subprocess.run([sys.executable, "-m", "venv", venv],
                          capture_output=True, text=True)
    if made.returncode:
        return None, "cannot make a virtual environment: " + made.stderr[-200:]
    pip = subprocess.run([python, "-m", "pip", "install", "--quiet", "torch",
                          "torchvision", "transformers", "onnx", "onnxscript"],
                         capture_output=True, text=True, timeout=1800)
    if pip.returncode:
        return None, "pip install torch transformers failed (no PyPI?): " + \
            pip.stderr.strip().splitlines()[-1][-200:]
    return python, None


def run_mp(runner, model, amp, steps, batch, tmp, extra=()):
    summary = os.path.join(tmp, "summary.json")
    if os.path.exists(summary):
        os.remove(summary)
    cmd = [runner, model, "--backend=cpu", "--amp=" + amp, "--batch-size",
           str(batch), "--steps", str(steps + 1), "--no-progress",
           "--eval-samples", str(batch), "--train-samples", str(4 * batch),
           "--summary", summary] + list(extra)
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit("mp-runner failed: %s\n%s" % (" ".join(cmd), out.stderr))
    with open(summary) as f:
        return json.load(f)["runs"][0]["step_ms"][1:]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--python", help="a Python with torch and transformers")
    p.add_argument("--models", default="bert,gpt2,resnet50,vit")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--rounds", type=int, default=1,
                   help="run each model's variants this many times in turn")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--mp-flag", action="append", default=[],
                   help="also time mp-runner with this flag, a row per "
                        "precision (repeatable), e.g. "
                        "--mp-flag=--fold-transposes=false")
    for size in ("batch", "seq", "hidden", "layers", "heads", "vocab",
                 "image"):
        p.add_argument("--" + size, type=int,
                       help="model size (torch_steps.py's default if absent)")
    a = p.parse_args()
    runner = os.path.join(a.build, "bin", "mp-runner")
    if not os.access(runner, os.X_OK):
        sys.exit("torch_cpu_steps.py: no mp-runner in %s" % a.build)
    info = subprocess.run([runner, "--device-info"], capture_output=True,
                          text=True).stdout
    cpu = re.search(r"^CPU: (.+)$", info, re.M)
    print("machine: %s, %d cores" % (cpu.group(1) if cpu else
                                     platform.machine(), os.cpu_count()))
    for line in info.splitlines():
        if line.startswith("  AVX2") or line.startswith("  matmuls") or \
                line.startswith("CPU backend"):
            print("  " + line.strip())
    python, why = torch_python(a.build, a.python)
    if python is None:
        sys.exit("torch_cpu_steps.py: " + why)
    sizes = (["--batch", "2", "--seq", "16", "--hidden", "32", "--layers",
              "1", "--heads", "2", "--vocab", "50", "--image", "32"]
             if a.quick else [])
    for size in ("batch", "seq", "hidden", "layers", "heads", "vocab",
                 "image"):
        if getattr(a, size) is not None:
            sizes += ["--" + size, str(getattr(a, size))]
    batch = a.batch or (2 if a.quick else 8)
    rows = []
    torch_version = ["?"]
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models.split(","):
            path = os.path.join(tmp, name + ".onnx")
            subprocess.run([python, HELPER, "export", name, path] + sizes,
                           check=True, capture_output=True)
            # Each variant: its label and a function timing one run of it
            # (step times in ms).
            variants = []
            layouts = (["auto", "off"] if name in ("resnet50", "vit")
                       else ["auto"])
            for amp in ["off", "bf16"]:
                for layout in layouts:
                    label = "mp " + ("FP32" if amp == "off" else "AMP-bf16")
                    if len(layouts) > 1:
                        label += " NHWC" if layout == "auto" else " NCHW"
                    for flag in [None] + a.mp_flag:
                        extra = ["--layout=" + layout] + ([flag] if flag
                                                          else [])
                        variants.append((
                            label + (" " + flag if flag else ""),
                            lambda amp=amp, extra=extra: run_mp(
                                runner, path, amp, a.steps, batch, tmp,
                                extra)))
            for precision in ["fp32", "bf16"]:
                def run_torch(precision=precision):
                    out = subprocess.run(
                        [python, HELPER, "time", name, precision, "--steps",
                         str(a.steps)] + sizes, capture_output=True,
                        text=True)
                    if out.returncode:
                        sys.exit("torch_steps.py failed:\n" + out.stderr)
                    r = json.loads(out.stdout.strip().splitlines()[-1])
                    torch_version[0] = r["torch"]
                    return r["step_ms"]
                variants.append(("PyTorch eager " + (
                    "fp32" if precision == "fp32" else "autocast bf16"),
                    run_torch))
            steps = {label: [] for label, _ in variants}
            for _ in range(max(1, a.rounds)):
                for label, run in variants:
                    steps[label] += run()
            base = statistics.median(steps[variants[0][0]])
            for label, _ in variants:
                ms = steps[label]
                if label.startswith("PyTorch"):
                    label = label.replace("PyTorch", "PyTorch " +
                                          torch_version[0])
                rows.append((name, label, min(ms), statistics.median(ms),
                             statistics.median(ms) / base))
    print()
    print("| model | variant | min ms | median ms | median / mp FP32 |")
    print("|---|---|---|---|---|")
    for name, variant, lo, med, ratio in rows:
        print("| %s | %s | %.4g | %.4g | %.2f |" % (name, variant, lo, med,
                                                   ratio))


if __name__ == "__main__":
    main()
