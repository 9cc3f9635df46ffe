#!/usr/bin/env python3
"""CPU training-step times: mp FP32 / AMP-bf16 / AMP-f16 against JAX jit.

In one invocation, on this machine, for each model:

  * mp-runner on the CPU backend with --amp=off, bf16 and f16: the step
    times mp-runner records (the first, warm-up, step left out), and the
    share of the kernels' time spent in matmuls, from the runtime's kernel
    profile (MP_PROFILE_KERNELS);
  * the same model in JAX (jax.jit on XLA's CPU backend, benchmarks/
    jax_steps.py) in fp32 and bf16, from a virtual environment this script
    makes (build/bench-venv) and fills from PyPI; where PyPI or JAX cannot
    be had, the JAX rows say so and the rest still runs.

Models (utils/generate-train-step.py forward functions, SGD):
  mlp          batch 512, 1024-4096-4096-1024 (the issue's GEMM-heavy MLP)
  transformer  batch 8, seq 256, d_model 512, 8 heads, ffn 2048, 2 layers
  examples     examples/mlp_step.mlir and examples/transformer_step.mlir,
               the small steps of the test suite (mp only)

Reports min and median ms per step and the ratio of each variant's median
to mp FP32's median in the same run (ratios below 1 are faster than mp
FP32). Timings depend on the machine: compare only within one run.

usage: benchmarks/cpu_step_times.py [--build build] [--steps 12]
                                    [--example-steps 300]
                                    [--models mlp,transformer,examples]
                                    [--no-jax] [--quick]
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

SIZES = {
    "mlp": dict(batch=512, inputs=1024, width=4096, layers=2, classes=1024),
    "transformer": dict(batch=8, seq=256, d_model=512, heads=8, ffn=2048,
                        layers=2, vocab=100),
}
# --quick: the same models at sizes that take a second (the suite's smoke
# test of this script).
QUICK = {
    "mlp": dict(batch=32, inputs=64, width=128, layers=2, classes=10),
    "transformer": dict(batch=2, seq=16, d_model=32, heads=4, ffn=64,
                        layers=1, vocab=50),
}


def flags(sizes):
    out = []
    for k, v in sizes.items():
        out += ["--" + k.replace("_", "-"), str(v)]
    return out


def summarise(ms):
    return min(ms), statistics.median(ms)


def run_mp(runner, model, amp, steps, tmp):
    """Step times (warm-up step dropped) and matmul share of kernel time."""
    summary = os.path.join(tmp, "summary.json")
    profile = os.path.join(tmp, "profile.json")
    for stale in (summary, profile):
        if os.path.exists(stale):
            os.remove(stale)
    env = dict(os.environ, MP_PROFILE_KERNELS=profile)
    cmd = [runner, model, "--backend=cpu", "--amp=" + amp,
           "--steps", str(steps + 1), "--no-progress", "--eval-samples", "1",
           "--train-samples", "2048", "--summary", summary]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode:
        sys.exit("mp-runner failed: %s\n%s" % (" ".join(cmd), out.stderr))
    with open(summary) as f:
        ms = json.load(f)["runs"][0]["step_ms"][1:]
    if not os.path.exists(profile):
        sys.exit("mp-runner wrote no kernel profile: %s" % out.stderr)
    with open(profile) as f:
        entries = json.load(f)["entries"]
    total = sum(e["seconds"] for e in entries.values())
    gemm = entries.get("matmul", {}).get("seconds", 0.0)
    return ms, gemm / total if total else 0.0


def jax_python(build):
    """A Python with JAX, from build/bench-venv; (None, why) if none."""
    venv = os.path.join(build, "bench-venv")
    python = os.path.join(venv, "bin", "python")
    check = [python, "-c", "import jax; print(jax.__version__)"]
    if os.path.exists(python) and subprocess.run(
            check, capture_output=True).returncode == 0:
        return python, None
    made = subprocess.run([sys.executable, "-m", "venv", venv],
                          capture_output=True, text=True)
    if made.returncode:
        return None, "cannot make a virtual environment: " + made.stderr[-200:]
    pip = subprocess.run([python, "-m", "pip", "install", "--quiet", "jax"],
                         capture_output=True, text=True, timeout=900)
    if pip.returncode:
        return None, "pip install jax failed (no PyPI?): " + \
            pip.stderr.strip().splitlines()[-1][-200:]
    return python, None


def run_jax(python, model, precision, sizes, steps):
    cmd = [python, os.path.join(ROOT, "benchmarks", "jax_steps.py"), model,
           "--precision", precision, "--steps", str(steps)] + flags(sizes)
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit("jax_steps.py failed: %s\n%s" % (" ".join(cmd), out.stderr))
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return r["min_ms"], r["median_ms"], r["jax"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--steps", type=int, default=12)
    # The examples take a millisecond a step, where thread wake-ups make
    # single steps noisy: they run longer.
    p.add_argument("--example-steps", type=int, default=300)
    p.add_argument("--models", default="mlp,transformer,examples")
    p.add_argument("--no-jax", action="store_true")
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    runner = os.path.join(a.build, "bin", "mp-runner")
    if not os.access(runner, os.X_OK):
        sys.exit("cpu_step_times.py: no mp-runner in %s (run utils/mp build, "
                 "or pass --build)" % a.build)
    info = subprocess.run([runner, "--device-info"], capture_output=True,
                          text=True).stdout
    cpu = re.search(r"^CPU: (.+)$", info, re.M)
    print("machine: %s, %d cores" % (cpu.group(1) if cpu else
                                     platform.machine(), os.cpu_count()))
    for line in info.splitlines():
        if line.startswith("  AVX2") or line.startswith("  matmuls") or \
                line.startswith("CPU backend"):
            print("  " + line.strip())
    python, why = (None, "--no-jax") if a.no_jax else jax_python(a.build)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models.split(","):
            if name == "examples":
                models = [(e, os.path.join(ROOT, "examples", e + ".mlir"),
                           None) for e in ["mlp_step", "transformer_step"]]
            else:
                sizes = (QUICK if a.quick else SIZES)[name]
                path = os.path.join(tmp, name + ".mlir")
                subprocess.run([sys.executable,
                                os.path.join(ROOT, "utils",
                                             "generate-train-step.py"),
                                name, "-o", path] + flags(sizes), check=True)
                label = name + " (" + ", ".join(
                    "%s %s" % (k, v) for k, v in sizes.items()) + ")"
                models = [(label, path, (name, sizes))]
            for label, path, jax_model in models:
                base = None
                steps = a.steps if jax_model else a.example_steps
                for amp in ["off", "bf16", "f16"]:
                    ms, share = run_mp(runner, path, amp, steps, tmp)
                    lo, med = summarise(ms)
                    base = base or med
                    rows.append((label, "mp " + ("FP32" if amp == "off"
                                                 else "AMP-" + amp),
                                 lo, med, med / base, "%.0f%%" % (100 * share)))
                if jax_model is None:
                    continue
                for precision in ["fp32", "bf16"]:
                    if python is None:
                        rows.append((label, "JAX jit " + precision, None,
                                     None, None, why))
                        continue
                    lo, med, version = run_jax(python, jax_model[0],
                                               precision, jax_model[1],
                                               a.steps)
                    rows.append((label, "JAX %s jit %s" % (version, precision),
                                 lo, med, med / base, ""))
    print()
    print("| model | variant | min ms | median ms | median / mp FP32 | "
          "matmul share |")
    print("|---|---|---|---|---|---|")
    for label, variant, lo, med, ratio, note in rows:
        if lo is None:
            print("| %s | %s | - | - | - | not run: %s |" % (label, variant,
                                                             note))
        else:
            print("| %s | %s | %.3g | %.3g | %.2f | %s |" % (
                label, variant, lo, med, ratio, note))


if __name__ == "__main__":
    main()
