#!/usr/bin/env python3
"""Epilogue fusion: step times with tg-fuse-epilogues on and off.

In one invocation, on this machine, for each model and precision, mp-runner
trains the same step twice per round, with --fuse-epilogues=true and
=false, for --rounds rounds (alternating, so that drift in the machine's
speed hits both alike). Reports the median ms per step of each variant
(the first steps, warm-up, left out) and the speed-up unfused / fused.

Models (utils/generate-train-step.py forward functions), sized per backend:
  mlp          dense layers with bias and ReLU (SGD)
  transformer  pre-norm blocks: bias adds, residual adds, GELU (Adam)

usage: benchmarks/epilogue_fusion.py [--runner build/bin/mp-runner]
           [--backend cpu|cuda] [--steps 30] [--rounds 2]
           [--models mlp,transformer] [--precisions fp32,bf16]
           [--json out.json]
With --backend cpu the bf16 rows run twice more under MP_CPU_ISA=avx2 (and
DNNL_MAX_CPU_ISA=AVX2) where the CPU has AVX-512, as the AVX2 emulation.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile

from machine import cpu_flags, cpu_name, run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATOR = os.path.join(ROOT, "utils", "generate-train-step.py")

MODELS = {
    "cpu": {
        "mlp": (["mlp", "--batch", "64", "--inputs", "1024", "--width",
                 "1024", "--layers", "3", "--classes", "10"],
                ["--optimizer=sgd"]),
        "transformer": (["transformer", "--batch", "8", "--seq", "64",
                         "--d-model", "256", "--heads", "4", "--ffn", "1024",
                         "--layers", "2"], ["--optimizer=adam"]),
    },
    "cuda": {
        "mlp": (["mlp", "--batch", "1024", "--inputs", "4096", "--width",
                 "4096", "--layers", "4", "--classes", "1000"],
                ["--optimizer=sgd"]),
        "transformer": (["transformer", "--batch", "32", "--seq", "256",
                         "--d-model", "1024", "--heads", "16", "--ffn",
                         "4096", "--layers", "4"], ["--optimizer=adam"]),
    },
}
PRECISIONS = {"fp32": "off", "f16": "f16", "bf16": "bf16"}


def step_times(log, skip):
    return [json.loads(line)["step_ms"] for line in open(log)][skip:]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner",
                        default=os.path.join(ROOT, "build", "bin",
                                             "mp-runner"))
    parser.add_argument("--backend", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--models", default="mlp,transformer")
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    skip = 5
    if not os.access(args.runner, os.X_OK):
        sys.exit("epilogue_fusion.py: no mp-runner at %s (run utils/mp "
                 "build, or pass --runner)" % args.runner)
    if args.steps <= skip:
        sys.exit("--steps must be more than %d (the warm-up)" % skip)
    base = dict(os.environ)
    variants = [("", base)]
    flags = cpu_flags()
    if args.backend == "cpu" and "avx512f" in flags:
        variants.append((" (avx2)", dict(base, MP_CPU_ISA="avx2",
                                         DNNL_MAX_CPU_ISA="AVX2")))

    if args.backend == "cpu":
        print("machine: %s, %d cores, flags %s" %
              (cpu_name(), os.cpu_count(), " ".join(flags)))
    else:
        print("machine: %s" % run([args.runner, "--device-info"], base,
                                  "mp-runner --device-info").splitlines()[0])
    print("backend %s; %d steps, the first %d left out; %d rounds\n" %
          (args.backend, args.steps, skip, args.rounds))
    header = ("%-12s %-12s %11s %11s %9s" %
              ("model", "precision", "unfused ms", "fused ms", "speed-up"))
    print(header)
    print("-" * len(header))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(","):
            generate, train = MODELS[args.backend][model]
            step = os.path.join(tmp, model + ".mlir")
            run([sys.executable, GENERATOR] + generate + ["-o", step], base,
                "generating " + model)
            for label in args.precisions.split(","):
                amp = PRECISIONS[label]
                for suffix, env in variants:
                    if suffix and amp == "off":
                        continue
                    times = {True: [], False: []}
                    for _ in range(args.rounds):
                        for fuse in (True, False):
                            log = os.path.join(tmp, "steps.jsonl")
                            run([args.runner, step, "--amp=" + amp,
                                 "--backend=" + args.backend,
                                 "--steps", str(args.steps), "--no-progress",
                                 "--eval-samples", "64",
                                 "--train-samples", "4096",
                                 "--fuse-epilogues=%s" % str(fuse).lower(),
                                 "--log", log] + train, env,
                                "%s %s%s" % (model, label, suffix))
                            times[fuse] += step_times(log, skip)
                    fused = statistics.median(times[True])
                    unfused = statistics.median(times[False])
                    row = {"model": model, "precision": label + suffix,
                           "unfused_ms": unfused, "fused_ms": fused,
                           "speedup": unfused / fused}
                    rows.append(row)
                    print("%-12s %-12s %11.2f %11.2f %9.2f" %
                          (model, label + suffix, unfused, fused,
                           unfused / fused))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": cpu_name(), "flags": flags,
                       "backend": args.backend, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
