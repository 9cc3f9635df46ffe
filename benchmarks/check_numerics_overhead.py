#!/usr/bin/env python3
"""The cost of tg-check-numerics: step times with and without the checks.

In one invocation, on this machine, for each model, mp-runner trains the
same AMP step (CPU backend) four ways, and the table gives min and median
ms per step (the first, warm-up, step left out) and the ratio of each
median to the plain step's median in the same run:

  plain          --amp=<amp>
  backward       --check-numerics --check-numerics-scope=backward
                 (attribution of skipped steps: the gradient ops only)
  all            --check-numerics (every op, with operand ranges)
  adapt          --adapt-precision (every op, plus the adaptation logic)

Models (utils/generate-train-step.py forward functions, SGD):
  mlp          batch 512, 1024-4096-4096-1024
  transformer  batch 8, seq 256, d_model 512, 8 heads, ffn 2048, 2 layers
  examples     examples/mlp_step.mlir and examples/transformer_step.mlir

Timings depend on the machine: compare only within one run.

usage: benchmarks/check_numerics_overhead.py [--build build] [--steps 12]
           [--example-steps 200] [--amp bf16|f16] [--models ...] [--quick]
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

# The models and sizes of cpu_step_times.py.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_step_times import QUICK, SIZES, flags  # noqa: E402

VARIANTS = [
    ("plain", []),
    ("backward", ["--check-numerics", "--check-numerics-scope=backward"]),
    ("all", ["--check-numerics"]),
    ("adapt", ["--adapt-precision", "{tmp}/policy.json"]),
]


def step_times(runner, model, amp, steps, extra, tmp):
    summary = os.path.join(tmp, "summary.json")
    if os.path.exists(summary):
        os.remove(summary)
    cmd = [runner, model, "--backend=cpu", "--amp=" + amp, "--steps",
           str(steps + 1), "--no-progress", "--eval-samples", "1",
           "--train-samples", "2048", "--summary", summary]
    cmd += [e.format(tmp=tmp) for e in extra]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit("mp-runner failed: %s\n%s" % (" ".join(cmd), out.stderr))
    with open(summary) as f:
        return json.load(f)["runs"][0]["step_ms"][1:]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--example-steps", type=int, default=200)
    p.add_argument("--amp", default="bf16", choices=["bf16", "f16"])
    p.add_argument("--models", default="mlp,transformer,examples")
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    runner = os.path.join(a.build, "bin", "mp-runner")
    if not os.access(runner, os.X_OK):
        sys.exit("check_numerics_overhead.py: no mp-runner in %s (run "
                 "utils/mp build, or pass --build)" % a.build)
    info = subprocess.run([runner, "--device-info"], capture_output=True,
                          text=True).stdout
    cpu = re.search(r"^CPU: (.+)$", info, re.M)
    print("machine: %s, %d cores; AMP %s on the CPU backend"
          % (cpu.group(1) if cpu else platform.machine(), os.cpu_count(),
             a.amp))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models.split(","):
            if name == "examples":
                models = [(e, os.path.join(ROOT, "examples", e + ".mlir"),
                           a.example_steps)
                          for e in ["mlp_step", "transformer_step"]]
            else:
                sizes = (QUICK if a.quick else SIZES)[name]
                path = os.path.join(tmp, name + ".mlir")
                subprocess.run([sys.executable,
                                os.path.join(ROOT, "utils",
                                             "generate-train-step.py"),
                                name, "-o", path] + flags(sizes), check=True)
                models = [(name, path, a.steps)]
            for label, path, steps in models:
                base = None
                for variant, extra in VARIANTS:
                    ms = step_times(runner, path, a.amp, steps, extra, tmp)
                    lo, med = min(ms), statistics.median(ms)
                    base = base or med
                    rows.append((label, variant, lo, med, med / base))
    print()
    print("| model | checks | min ms | median ms | / plain |")
    print("|---|---|---:|---:|---:|")
    for label, variant, lo, med, ratio in rows:
        print("| %s | %s | %.3f | %.3f | %.2fx |"
              % (label, variant, lo, med, ratio))


if __name__ == "__main__":
    main()
