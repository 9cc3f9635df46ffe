#!/usr/bin/env python3
"""Data-parallel step times: 1 rank against 2 ranks under mpirun, on the CPU.

In one invocation, on this machine, for each model and precision:

  * 1 rank: mp-runner on a step of local batch B, one thread
    (OMP_NUM_THREADS=1);
  * 2 ranks: mpirun -np 2 mp-runner on the same step (global batch 2B),
    one thread each, each rank bound to its own core, so the pair does
    twice the work of the single rank in the same wall time if the
    all-reduce were free.

Reports the median ms per step (the first steps, warm-up, left out), the
bytes each rank contributes to the all-reduces per step (from mp-runner's
--summary) and what a ring all-reduce of N ranks moves per rank,
2 (N - 1) / N times that, and the weak-scaling efficiency t(1 rank) /
t(2 ranks) (1.0: the all-reduce costs nothing). FP32 sends f32 gradients;
AMP bf16 sends bf16 (tg.all_reduce is on the allow list): half the bytes.

Models (utils/generate-train-step.py forward functions):
  mlp          batch 64, 1024-2048-2048-10 (SGD)
  transformer  batch 8, seq 64, d_model 256, 4 heads, ffn 1024, 2 layers (Adam)
  resnet       batch 8, 32x32 images, width 32, 2 blocks per stage (SGD)

usage: benchmarks/data_parallel.py [--build build] [--steps 30]
                                   [--models mlp,transformer,resnet]
                                   [--json out.json]
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

from machine import cpu_flags, cpu_name, run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATOR = os.path.join(ROOT, "utils", "generate-train-step.py")

MODELS = {
    "mlp": (["mlp", "--batch", "64", "--inputs", "1024", "--width", "2048",
             "--layers", "2", "--classes", "10"], ["--optimizer=sgd"]),
    "transformer": (["transformer", "--batch", "8", "--seq", "64",
                     "--d-model", "256", "--heads", "4", "--ffn", "1024",
                     "--layers", "2"], ["--optimizer=adam"]),
    "resnet": (["resnet", "--batch", "8", "--image", "32", "--width", "32",
                "--blocks", "2"], ["--optimizer=sgd"]),
}
PRECISIONS = [("fp32", "off"), ("bf16", "bf16")]


def median_step_ms(log, skip):
    times = [json.loads(line)["step_ms"] for line in open(log)]
    return statistics.median(times[skip:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--models", default="mlp,transformer,resnet")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    runner = os.path.join(args.build, "bin", "mp-runner")
    mpirun = shutil.which("mpirun")
    if not mpirun:
        sys.exit("no mpirun: install openmpi-bin (utils/mp setup)")
    mpi = [mpirun, "--oversubscribe", "--bind-to", "core", "--mca",
           "btl_vader_single_copy_mechanism", "none"]
    if os.geteuid() == 0:
        mpi.append("--allow-run-as-root")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    skip = 5

    print("machine: %s, %d cores, flags %s" %
          (cpu_name(), os.cpu_count(), " ".join(cpu_flags())))
    print("one thread per rank; %d steps, the first %d left out\n" %
          (args.steps, skip))
    header = ("%-12s %-5s %10s %10s %12s %12s %11s" %
              ("model", "prec", "1 rank ms", "2 ranks ms", "MiB/step",
               "ring MiB/rk", "efficiency"))
    print(header)
    print("-" * len(header))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(","):
            generate, train = MODELS[model]
            step = os.path.join(tmp, model + ".mlir")
            run([sys.executable, GENERATOR] + generate + ["-o", step], env,
                "generating " + model)
            for label, amp in PRECISIONS:
                common = [step, "--amp=" + amp, "--steps", str(args.steps),
                          "--no-progress", "--eval-samples", "64",
                          "--train-samples", "4096"] + train
                one_log = os.path.join(tmp, "one.jsonl")
                run([runner] + common + ["--log", one_log], env,
                    "%s %s on 1 rank" % (model, label))
                two_log = os.path.join(tmp, "two.jsonl")
                summary = os.path.join(tmp, "two.json")
                run(mpi + ["-np", "2", runner] + common +
                    ["--log", two_log, "--summary", summary], env,
                    "%s %s on 2 ranks" % (model, label))
                t1 = median_step_ms(one_log, skip)
                t2 = median_step_ms(two_log, skip)
                dp = json.load(open(summary))["data_parallel"]
                payload = dp["all_reduce_bytes"] / 2**20
                ring = 2 * (2 - 1) / 2 * payload
                row = {"model": model, "precision": label, "one_rank_ms": t1,
                       "two_ranks_ms": t2, "all_reduces": dp["all_reduces"],
                       "payload_mib": payload, "ring_mib_per_rank": ring,
                       "efficiency": t1 / t2}
                rows.append(row)
                print("%-12s %-5s %10.2f %10.2f %12.3f %12.3f %11.2f" %
                      (model, label, t1, t2, payload, ring, t1 / t2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": cpu_name(), "flags": cpu_flags(),
                       "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
