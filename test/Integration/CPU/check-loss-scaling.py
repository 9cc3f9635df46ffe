"""Execution tests of loss scaling through a compiled step (mp-runner).

Runs Inputs/scaled_linear.mlir on fresh random data in which a random set of
batches carries an inf or a NaN, and checks the per-step log against a
reference of torch.amp.GradScaler's semantics written here:
  - a step whose gradients are not finite is skipped: parameters and
    optimizer state stay bit-identical (the weights hash does not change),
    the scale is multiplied by the backoff factor, the counter resets;
  - otherwise the update applies and after growth-interval clean steps the
    scale grows by the growth factor (if finite), and the counter resets;
  - the scale never becomes infinite.
Static mode skips the same steps with a fixed scale.

usage: check-loss-scaling.py <mp-runner [options]> <step.mlir> <work dir>
"""

import json
import shlex
import math
import os
import random
import subprocess
import sys

from npyfile import f32, write_npy




def run(runner, step, workdir, tag, x, t, rows, steps, options):
    xp = os.path.join(workdir, tag + ".x.npy")
    tp = os.path.join(workdir, tag + ".t.npy")
    log = os.path.join(workdir, tag + ".jsonl")
    write_npy(xp, (rows, 4), x)
    write_npy(tp, (rows, 4), t)
    cmd = shlex.split(runner) + [
        step, "--data", "x=" + xp, "--data", "t=" + tp, "--steps", str(steps),
        "--amp=f16", "--amp-options=" + options, "--log", log, "--no-progress"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("mp-runner failed:\n" + " ".join(cmd) + "\n" + out.stderr)
    with open(log) as f:
        return [json.loads(line) for line in f]


def fail(message):
    sys.exit("FAIL: " + message)


def main():
    runner, step, workdir = sys.argv[1:4]
    os.makedirs(workdir, exist_ok=True)
    seed = random.randrange(1 << 30)
    print("seed", seed)
    rng = random.Random(seed)
    steps, batch = 60, 8
    rows = steps * batch
    x = [rng.uniform(-1.0, 1.0) for _ in range(rows * 4)]
    t = [0.5 * v + 0.1 for v in x]
    bad = sorted(rng.sample(range(steps), 14))
    for s in bad:
        k = (s * batch + rng.randrange(batch)) * 4 + rng.randrange(4)
        x[k] = rng.choice([math.inf, -math.inf, math.nan])
    print("non-finite batches", bad)

    # Dynamic mode against the reference.
    init, growth, backoff, interval = 1024.0, 2.0, 0.5, 3
    log = run(runner, step, workdir, "dynamic", x, t, rows, steps,
              "loss-scaling=dynamic init-scale=%g growth-interval=%d" %
              (init, interval))
    scale, good, previous_hash = init, 0, None
    for s, entry in enumerate(log):
        skipped = s in bad
        if skipped:
            scale, good = f32(scale * backoff), 0
        else:
            good += 1
            if good == interval:
                grown = f32(scale * growth)
                if math.isfinite(grown):
                    scale = grown
                good = 0
        where = "step %d" % (s + 1)
        if entry["skipped"] != skipped:
            fail("%s: skipped=%s, expected %s" % (where, entry["skipped"], skipped))
        if entry["loss_scale"] != scale or entry["good_steps"] != good:
            fail("%s: scale %s counter %s, expected %s %s" % (
                where, entry["loss_scale"], entry["good_steps"], scale, good))
        if previous_hash is not None:
            same = entry["weights_hash"] == previous_hash
            if skipped and not same:
                fail(where + ": skipped, but parameters or state changed")
            if not skipped and same:
                fail(where + ": applied, but parameters and state did not change")
        previous_hash = entry["weights_hash"]
    print("dynamic: %d steps, %d skipped, final scale %g: match" %
          (len(log), len(bad), scale))

    # Static mode: the same skips, a fixed scale.
    log = run(runner, step, workdir, "static", x, t, rows, steps,
              "loss-scaling=static init-scale=512")
    previous_hash = None
    for s, entry in enumerate(log):
        if entry["skipped"] != (s in bad):
            fail("static step %d: skipped=%s" % (s + 1, entry["skipped"]))
        if previous_hash is not None and (s in bad) != (
                entry["weights_hash"] == previous_hash):
            fail("static step %d: weights changed on a skip or not on an update"
                 % (s + 1))
        previous_hash = entry["weights_hash"]
    print("static: the same %d steps skipped" % len(bad))

    # Growth stops short of infinity: zero data gives zero (finite)
    # gradients at any scale, and 1e38 * 8 overflows, so the scale stays.
    zeros = [0.0] * (8 * 4 * 4)
    log = run(runner, step, workdir, "ceiling", zeros, zeros, 32, 4,
              "loss-scaling=dynamic init-scale=1e38 growth-factor=8 "
              "growth-interval=1")
    scales = [e["loss_scale"] for e in log]
    if any(e["skipped"] for e in log) or scales != [f32(1e38)] * 4:
        fail("scales near the f32 maximum: %s, expected to stay at 1e38" %
             scales)
    # And growth up to the largest finite scale is allowed.
    log = run(runner, step, workdir, "ceiling2", zeros, zeros, 32, 4,
              "loss-scaling=dynamic init-scale=1e38 growth-factor=3 "
              "growth-interval=1")
    scales = [e["loss_scale"] for e in log]
    if scales != [f32(3e38)] * 4:
        fail("scales %s, expected 3e38 once, then no further growth" % scales)
    print("ceiling: the scale stops below infinity")

if __name__ == "__main__":
    main()
