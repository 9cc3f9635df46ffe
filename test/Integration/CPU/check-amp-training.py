"""Trains a step with mp-runner --compare (FP32 against AMP) on a fresh
seed and checks the final accuracies and the loss curves.

usage: check-amp-training.py <mp-runner [options]> <step.mlir> <amp> <steps>
           <max accuracy difference in points> <max mean loss difference>
"""

import json
import shlex
import os
import random
import subprocess
import sys
import tempfile


def main():
    runner, step, amp, steps, max_points, max_loss = sys.argv[1:7]
    seed = random.randrange(1 << 30)
    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "summary.json")
        cmd = shlex.split(runner) + [
            step, "--compare", "--amp=" + amp, "--steps", steps, "--seed",
            str(seed), "--summary", summary, "--no-progress"]
        if "--eval-samples" not in runner:
            cmd += ["--eval-samples", "16384"]
        out = subprocess.run(cmd, capture_output=True, text=True)
        print(out.stdout)
        if out.returncode != 0:
            sys.exit("mp-runner failed (seed %d):\n%s" % (seed, out.stderr))
        with open(summary) as f:
            runs = json.load(f)["runs"]
    fp32, mixed = runs
    points = mixed["accuracy"] - fp32["accuracy"]
    # Loss curves: mean absolute difference over the last quarter of steps.
    n = len(fp32["losses"])
    tail = range(3 * n // 4, n)
    gap = sum(abs(fp32["losses"][i] - mixed["losses"][i]) for i in tail) / len(tail)
    print("seed %d: fp32 %.2f%%, %s %.2f%% (%+.2f points), mean loss gap %.4f"
          % (seed, fp32["accuracy"], amp, mixed["accuracy"], points, gap))
    if abs(points) > float(max_points):
        sys.exit("FAIL: accuracy differs by %.2f points" % points)
    if gap > float(max_loss):
        sys.exit("FAIL: loss curves differ by %.4f on average" % gap)
    if fp32["losses"][-1] > 0.7 * fp32["losses"][0]:
        sys.exit("FAIL: the model did not learn")
    print("PASS")


if __name__ == "__main__":
    main()
