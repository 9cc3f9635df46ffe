#!/usr/bin/env python3
"""CPU step times of the example steps under FP32 and AMP, through mp-runner.

Runs each example with --amp=off, f16 and bf16 in one invocation of this
script and reports the mean step time (first step excluded) and the ratio to
FP32. The CPU backend has no fast f16/bf16 GEMM: low-precision storage costs
conversions there, so AMP is expected to be slower on the CPU; the ratios are
the point of comparison with the CUDA backend later.

usage: benchmarks/cpu_step_times.py [--build build] [--steps 300]
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--steps", type=int, default=300)
    a = p.parse_args()
    runner = os.path.join(a.build, "bin", "mp-runner")
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    print("machine: %s, %d cores" % (cpu, os.cpu_count()))
    print("| step | fp32 ms | f16 ms | bf16 ms | f16 / fp32 | bf16 / fp32 |")
    print("|---|---|---|---|---|---|")
    for example in ["mlp_step", "transformer_step"]:
        times = {}
        for amp in ["off", "f16", "bf16"]:
            with tempfile.TemporaryDirectory() as tmp:
                summary = os.path.join(tmp, "s.json")
                cmd = [runner, os.path.join(ROOT, "examples", example + ".mlir"),
                       "--amp=" + amp, "--steps", str(a.steps), "--no-progress",
                       "--eval-samples", "64", "--summary", summary]
                out = subprocess.run(cmd, capture_output=True, text=True)
                if out.returncode:
                    sys.exit(out.stderr)
                with open(summary) as f:
                    times[amp] = json.load(f)["runs"][0]["mean_step_ms"]
        print("| %s | %.3f | %.3f | %.3f | %.2fx | %.2fx |" % (
            example, times["off"], times["f16"], times["bf16"],
            times["f16"] / times["off"], times["bf16"] / times["off"]))


if __name__ == "__main__":
    main()
