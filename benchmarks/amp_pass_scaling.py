#!/usr/bin/env python3
"""Times tg-auto-mixed-precision against parsing + verifying the same file.

For each model (MLP, transformer) and size (10^3 .. 10^6 ops), generates a
training step with utils/generate-train-step.py --hand-written, then runs mp-opt on it with
--mlir-timing, once with the pass and once without, in the same run of this
script. Reports, per size, the best of --repeat runs of:

  parse+verify  mp-opt's "Parser" timer (parsing and the verification after it)
  pass          the TGAutoMixedPrecision timer, with --verify-each=false so
                the post-pass verifier is not counted as pass time
  ratio         pass / (parse+verify)   (target: <= 0.5 at 10^6 ops)
  us/op         pass time per op        (target: flat within 20% across sizes)
  cse us/op     upstream CSE per op on the same file: a control, the
                simplest whole-function pass, showing what the memory
                hierarchy alone does to per-op time as the IR grows

usage: amp_pass_scaling.py [--mp-opt build/bin/mp-opt] [--sizes 1000,...]
                           [--repeat 3] [--report]
--report also times the pass with report= (JSON for every op).
"""

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMER = re.compile(r"^\s*([0-9.]+) \(\s*[0-9.]+%\)\s+(\S.*)$", re.M)


def timers(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return {name.strip(): float(t) for t, name in TIMER.findall(out.stderr)}


def best(cmd, key, repeat):
    return min(timers(cmd)[key] for _ in range(repeat))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mp-opt", default=os.path.join(ROOT, "build/bin/mp-opt"))
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--models", default="mlp,transformer")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--report", action="store_true")
    a = ap.parse_args()
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    print(f"machine: {platform.node()}, {cpu}, {os.cpu_count()} cores")
    print("| model | ops | parse+verify s | pass s | ratio | pass us/op |"
          " cse us/op |" + (" with report s |" if a.report else ""))
    print("|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if a.report else ""))
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for model in a.models.split(","):
            per_op = []
            for size in map(int, a.sizes.split(",")):
                path = os.path.join(tmp, f"{model}-{size}.mlir")
                gen = [sys.executable,
                       os.path.join(ROOT, "utils/generate-train-step.py"),
                       model, "--hand-written", "--min-ops", str(size), "-o",
                       path]
                subprocess.run(gen, check=True)
                with open(path) as f:
                    f.readline()
                    ops = int(re.search(r"; (\d+) ops", f.readline()).group(1))
                base = [a.mp_opt, path, "-o", os.devnull, "--mlir-timing"]
                parse = best(base, "Parser", a.repeat)
                amp = base + ["--tg-auto-mixed-precision",
                              "--verify-each=false"]
                pass_t = best(amp, "TGAutoMixedPrecision", a.repeat)
                cse = best(base + ["--cse", "--verify-each=false"], "CSE",
                           a.repeat)
                row = (f"| {model} | {ops} | {parse:.3f} | {pass_t:.3f} | "
                       f"{pass_t / parse:.2f} | {pass_t / ops * 1e6:.2f} | "
                       f"{cse / ops * 1e6:.2f} |")
                if a.report:
                    rep = amp[:-2] + [
                        "--tg-auto-mixed-precision=report=" +
                        os.path.join(tmp, "r.json"), "--verify-each=false"]
                    row += f" {best(rep, 'TGAutoMixedPrecision', a.repeat):.3f} |"
                print(row, flush=True)
                per_op.append((ops, pass_t / ops))
                if ops >= 1000000 and pass_t / parse > 0.5:
                    failed = True
                os.remove(path)
            # Flatness over the sizes where fixed costs no longer dominate.
            big = [t for n, t in per_op if n >= 10000]
            if big:
                spread = max(big) / min(big) - 1
                print(f"{model}: pass time per op varies by {spread:.0%} "
                      f"from 10^4 ops up")
                failed |= spread > 0.2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
