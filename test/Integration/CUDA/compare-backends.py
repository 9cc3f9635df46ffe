"""Trains a step on the CPU backend and on the CUDA backend from the same
seed (same initialisation, same batches) and compares the loss of every
step and the final accuracy.

The backends sum in different orders (blocked BLAS against cuBLASLt tiles,
serial against tree reductions), so results differ by rounding, and the
difference grows with training; the tolerance is relative to the loss and
chosen from the storage type of the run.

usage: compare-backends.py <mp-runner> <step.mlir> <amp> <steps> <tolerance>
"""

import json
import os
import random
import subprocess
import sys
import tempfile


def train(runner, step, backend, amp, steps, seed, workdir):
    summary = os.path.join(workdir, backend + ".json")
    cmd = [runner, step, "--backend=" + backend, "--amp=" + amp, "--steps",
           str(steps), "--seed", str(seed), "--eval-samples", "1024",
           "--no-progress", "--summary", summary]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit("%s failed:\n%s" % (" ".join(cmd), out.stderr))
    with open(summary) as f:
        run = json.load(f)["runs"][0]
    return run


def main():
    runner, step, amp, steps, tolerance = sys.argv[1:6]
    steps, tolerance = int(steps), float(tolerance)
    seed = random.randrange(1 << 30)
    with tempfile.TemporaryDirectory() as tmp:
        cpu = train(runner, step, "cpu", amp, steps, seed, tmp)
        gpu = train(runner, step, "cuda", amp, steps, seed, tmp)
    worst = 0.0
    for k, (a, b) in enumerate(zip(cpu["losses"], gpu["losses"])):
        if a is None or b is None:
            sys.exit("FAIL: step %d has a non-finite loss (cpu %s, cuda %s)"
                     % (k + 1, a, b))
        error = abs(a - b) / max(1.0, abs(a))
        worst = max(worst, error)
        if error > tolerance:
            sys.exit("FAIL (seed %d): step %d loss cpu %.9g cuda %.9g"
                     % (seed, k + 1, a, b))
    print("seed %d: %d steps, largest relative loss difference %.3g"
          % (seed, steps, worst))
    if "accuracy" in cpu:
        gap = abs(cpu["accuracy"] - gpu["accuracy"])
        print("accuracy cpu %.2f%% cuda %.2f%%" % (cpu["accuracy"],
                                                  gpu["accuracy"]))
        if gap > 1.0:
            sys.exit("FAIL: accuracies differ by %.2f points" % gap)
    print("PASS")


if __name__ == "__main__":
    main()
