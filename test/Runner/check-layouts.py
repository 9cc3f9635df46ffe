#!/usr/bin/env python3
"""Trains models with --layout=off and --layout=nhwc and compares the losses.

usage: check-layouts.py MP_RUNNER WORKDIR MODEL[:FLAGS] ...

For each model (FLAGS: extra mp-runner flags, comma-separated) and each of
FP32, AMP-bf16 and AMP-f16, on a fresh seed: the per-step losses of the two
layouts agree within a tolerance derived from the precision (8 units in the
last place for f16 and bf16 storage, 512 for FP32, relative: the
convolutions sum their hundreds to thousands of terms in another order,
which moves an f32 result by up to that many rounding errors), and the NHWC
run's layout report shows every layout op converted and at most one
transpose left per function (the input image's). Prints one line per run
and PASS or FAIL.
"""

import json
import os
import random
import subprocess
import sys

# Relative tolerances: 512 ulps of f32 (2^-23 each), 8 of bf16 (2^-8) and
# of f16 (2^-11).
TOLERANCE = {"off": 512 * 2.0**-23, "bf16": 8 * 2.0**-8, "f16": 8 * 2.0**-11}


def losses(path):
    with open(path) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()]


def main():
    runner, work, models = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(work, exist_ok=True)
    seed = random.randrange(1 << 31)
    print(f"seed {seed}")
    ok = True
    for spec in models:
        model, _, flags = spec.partition(":")
        extra = [f for f in flags.split(",") if f]
        name = os.path.basename(model)
        for amp in ("off", "bf16", "f16"):
            logs = {}
            for layout in ("off", "nhwc"):
                log = os.path.join(work, f"{name}-{amp}-{layout}.jsonl")
                report = os.path.join(work, f"{name}-{amp}.json")
                cmd = [runner, model, f"--amp={amp}", f"--layout={layout}",
                       "--steps=6", "--eval-samples=8", f"--seed={seed}",
                       f"--log={log}"] + extra
                if layout == "nhwc":
                    cmd.append(f"--layout-report={report}")
                r = subprocess.run(cmd, capture_output=True, text=True,
                                   timeout=600)
                if r.returncode != 0:
                    print(f"{name} --amp={amp} --layout={layout}: exit "
                          f"{r.returncode}\n{r.stderr[-2000:]}")
                    ok = False
                    break
                logs[layout] = losses(log)
            else:
                a, b = logs["off"], logs["nhwc"]
                worst = max(abs(x - y) / max(abs(x), 1e-30)
                            for x, y in zip(a, b))
                with open(report) as f:
                    functions = json.load(f)["functions"]
                converted = sum(len(fn["changed"]) for fn in functions)
                left = max(fn["transposes"]["after"] for fn in functions)
                good = (len(a) == len(b) == 6 and worst <= TOLERANCE[amp]
                        and converted > 0 and left <= 1)
                ok &= good
                print(f"{name} --amp={amp}: {len(a)} steps, losses within "
                      f"{TOLERANCE[amp]:.1e} (worst {worst:.1e}); "
                      f"{converted} ops converted, {left} transpose(s) left"
                      + ("" if good else "  <-- FAIL"))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
