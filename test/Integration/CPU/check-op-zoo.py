"""Runs Inputs/op_zoo.mlir for one step on fresh random data and compares its
loss with a float64 evaluation of the same function.

Every op computes in f32 here, so the tolerance is a small multiple of f32's
unit roundoff (2^-24) times the depth of the computation; the loss is a mean
of squares of O(1) values.

usage: check-op-zoo.py <mp-runner [options]> <op_zoo.mlir> <work dir>
"""

import json
import shlex
import math
import os
import random
import subprocess
import sys

from npyfile import f32, write_npy


def reference(x, t, w):
    rows = []
    for i in range(8):
        sb, e = [], []
        for j in range(4):
            xi = x[i][j]
            a = math.tanh(xi * w[j])
            b = 1.0 / (1.0 + math.exp(-xi))
            sq1 = xi * xi + 1.0
            r, s = 1.0 / math.sqrt(sq1), math.sqrt(sq1)
            l = math.log(s)
            mx, mn = max(a, -b), min(r, l)
            sb.append(mx / s - mn)
            e.append(math.exp(a))
        sl = (sb + e)[1:7]
        m = max(sl)
        lse = m + math.log(sum(math.exp(v - m) for v in sl))
        rows.append([v - lse + m for v in sl])
    mean = [sum(rows[i][k] for i in range(8)) / 8 for k in range(6)]
    p = [[rows[i][k] - mean[k] for k in range(6)] for i in range(8)]
    return sum((p[i][k] - t[i][k]) ** 2 for i in range(8) for k in range(6)) / 48


def main():
    runner, step, workdir = sys.argv[1:4]
    os.makedirs(workdir, exist_ok=True)
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    x = [[f32(rng.uniform(-2, 2)) for _ in range(4)] for _ in range(8)]
    t = [[f32(rng.uniform(-1, 1)) for _ in range(6)] for _ in range(8)]
    write_npy(os.path.join(workdir, "x.npy"), (8, 4), sum(x, []))
    write_npy(os.path.join(workdir, "t.npy"), (8, 6), sum(t, []))
    summary = os.path.join(workdir, "summary.json")
    cmd = shlex.split(runner) + [
        step, "--amp=off", "--steps", "1", "--no-progress",
        "--data", "x=" + os.path.join(workdir, "x.npy"),
        "--data", "t=" + os.path.join(workdir, "t.npy"),
        "--summary", summary]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit(out.stderr)
    with open(summary) as f:
        got = json.load(f)["runs"][0]["losses"][0]
    want = reference(x, t, [0.5, -1.0, 2.0, 0.25])
    # About 20 dependent f32 operations, each within an ulp or two.
    tolerance = 64 * 2.0 ** -24 * max(1.0, abs(want))
    print("seed %d: loss %.9g, float64 reference %.9g, |error| %.3g, "
          "tolerance %.3g" % (seed, got, want, abs(got - want), tolerance))
    if not abs(got - want) <= tolerance:
        sys.exit("FAIL")
    print("PASS")


if __name__ == "__main__":
    main()
