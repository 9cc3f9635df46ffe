#!/usr/bin/env python3
"""Per-kernel time of mixed precision over FP32, to find cliffs.

For each model, trains with --amp=off, bf16 and f16 under
MP_PROFILE_KERNELS and prints, per runtime entry point (conv2d, pool2d,
batch_norm_grad, ...), the milliseconds of --steps steps in each precision
and the ratio to FP32's. The steady state is measured: each precision runs
twice, for 2 and for 2 + --steps steps, and the difference is kept, so that
first-call work (oneDNN's JIT, allocation) is left out. With --rounds N
(default 3) the three precisions run N times in turn (FP32, bf16, f16,
FP32, ...), and each entry's fastest short run is taken from its fastest
long one: on a VM whose speed drifts by tens of percent, a slow spell then
cannot mark a cliff by falling on one precision's only run.
An entry at more than --limit (default 1.5) times its FP32 time is marked:
issue 25 asks that no op of an explicit --amp=bf16 or f16 run be that much
slower than in FP32. Casts (`copy`) exist only in the mixed runs and are
listed, not marked. Set MP_CPU_ISA=avx2 DNNL_MAX_CPU_ISA=AVX2 to measure
the AVX2 paths on an AVX-512 machine.

usage: benchmarks/kernel_ratios.py [--build build] [--steps 8]
                                   [--rounds 3] [--limit 1.5]
                                   MODEL[:FLAGS] ...
       (FLAGS: extra mp-runner flags, comma-separated)
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def profile(runner, model, amp, steps, extra, tmp):
    path = os.path.join(tmp, "profile.json")
    env = dict(os.environ, MP_PROFILE_KERNELS=path)
    cmd = [runner, model, "--backend=cpu", "--amp=" + amp, "--steps",
           str(steps), "--eval-samples", "1", "--no-progress"] + extra
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode:
        sys.exit("mp-runner failed: %s\n%s" % (" ".join(cmd), r.stderr))
    with open(path) as f:
        return {k: v["seconds"] for k, v in json.load(f)["entries"].items()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--limit", type=float, default=1.5)
    p.add_argument("models", nargs="+")
    a = p.parse_args()
    runner = os.path.join(a.build, "bin", "mp-runner")
    # What the runtime will use, after MP_CPU_ISA: mp-runner --device-info.
    info = subprocess.run([runner, "--device-info"], capture_output=True,
                          text=True).stdout
    print("; ".join(line.strip() for line in info.splitlines()
                    if line.startswith(("CPU:", "  AVX2", "  matmuls"))))
    print("MP_CPU_ISA=%s DNNL_MAX_CPU_ISA=%s" % (
        os.environ.get("MP_CPU_ISA", "-"),
        os.environ.get("DNNL_MAX_CPU_ISA", "-")))
    marked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for spec in a.models:
            model, _, extra = spec.partition(":")
            extra = [x for x in extra.split(",") if x]
            # Per precision, each entry's fastest 2-step and fastest
            # (2 + steps)-step time over the rounds; the difference of the
            # minima, since the minimum of differences would favour a round
            # whose short run was slow.
            amps = ("off", "bf16", "f16")
            warm = {amp: {} for amp in amps}
            full = {amp: {} for amp in amps}
            for _ in range(max(1, a.rounds)):
                for amp in amps:
                    for best, steps in ((warm, 2), (full, 2 + a.steps)):
                        for k, v in profile(runner, model, amp, steps, extra,
                                            tmp).items():
                            best[amp][k] = min(best[amp].get(k, v), v)
            runs = {amp: {k: max(0.0, v - warm[amp].get(k, 0))
                          for k, v in full[amp].items()} for amp in amps}
            print("\n%s %s (%d steps, the fastest of %d rounds)" % (
                os.path.basename(model), " ".join(extra), a.steps,
                max(1, a.rounds)))
            print("| entry | FP32 ms | bf16 ms | ratio | f16 ms | ratio |")
            print("|---|---:|---:|---:|---:|---:|")
            names = sorted(set().union(*runs.values()),
                           key=lambda k: -runs["off"].get(k, 0))
            for name in names:
                t = {amp: 1000 * runs[amp].get(name, 0) for amp in runs}
                cells = []
                for amp in ("bf16", "f16"):
                    if t["off"] > 0:
                        ratio = t[amp] / t["off"]
                        mark = ratio > a.limit and name != "copy" and \
                            t[amp] - t["off"] > 1.0
                        marked += mark
                        cells.append("%.1f | %.2f%s" % (
                            t[amp], ratio, " **" if mark else ""))
                    else:
                        cells.append("%.1f | -" % t[amp])
                print("| %s | %.1f | %s |" % (name, t["off"], " | ".join(cells)))
    print("\n%d entries over %.2fx their FP32 time (by more than 1 ms)" % (
        marked, a.limit))


if __name__ == "__main__":
    main()
