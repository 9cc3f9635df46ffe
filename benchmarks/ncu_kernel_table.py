#!/usr/bin/env python3
"""A kernel table from Nsight Compute's CSV: time per kernel per step.

Sums `gpu__time_duration.sum` per kernel over an `ncu --csv` log of a
training run and prints a Markdown table, largest first: calls and
milliseconds per step, and each kernel's share of all kernel time. Kernel
names lose their parameter lists and namespaces, so the template
instances of one kernel (softmaxRowsKernel<float, 32>) stay apart while
the calls of each are pooled. ncu serialises kernels, so the sum exceeds a
step's wall time.

    ncu --clock-control none --metrics gpu__time_duration.sum --csv \\
        --print-units base mp-runner t.mlir --backend=cuda --amp=bf16 \\
        --steps 2 --train-samples 16 --eval-samples 8 --no-progress > ncu.csv
    benchmarks/ncu_kernel_table.py ncu.csv --steps 2

(benchmarks/README.md, "Where the transformer's time goes", made t.mlir
with utils/generate-train-step.py at cuda_step_times.py's sizes.)

usage: benchmarks/ncu_kernel_table.py CSV [--steps N] [--top K]
"""

import argparse
import collections
import csv
import re
import sys

METRIC = "gpu__time_duration.sum"


def short_name(name):
    """`void ns::kernel<float, 32>(args)` -> `kernel<float, 32>`."""
    if name.startswith("void "):
        name = name[len("void "):]
    name = name.replace("(anonymous namespace)::", "")
    depth, cut = 0, len(name)
    for i, c in enumerate(name):  # the parameter list: the first '(' at
        if c == "<":              # template depth 0
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0:
            cut = i
            break
    name = name[:cut]
    head = name.split("<", 1)
    head[0] = re.sub(r"^.*::", "", head[0])
    return "<".join(head)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("csv")
    p.add_argument("--steps", type=float, default=1,
                   help="training steps the log holds (the table divides "
                   "by it)")
    p.add_argument("--top", type=int, default=30)
    a = p.parse_args()
    try:
        with open(a.csv, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        sys.exit("ncu_kernel_table.py: %s: %s" % (a.csv, e.strerror))
    # ncu prints the program's own output and its notes before the CSV.
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')),
                 None)
    if start is None:
        sys.exit("ncu_kernel_table.py: %s: no ncu CSV header (\"ID\", ...)"
                 % a.csv)
    if a.steps <= 0:
        sys.exit("ncu_kernel_table.py: --steps must be positive")
    ns, calls = collections.Counter(), collections.Counter()
    for row in csv.DictReader(lines[start:]):
        if row.get("Metric Name") != METRIC:
            continue
        try:
            value = float(row["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
        name = short_name(row.get("Kernel Name", "?"))
        ns[name] += value
        calls[name] += 1
    if not ns:
        sys.exit("ncu_kernel_table.py: %s: no %s values (was ncu run with "
                 "--metrics %s --print-units base?)" % (a.csv, METRIC, METRIC))
    total = sum(ns.values()) / 1e6 / a.steps
    print("| kernel | calls per step | ms per step | share |")
    print("|---|---:|---:|---:|")
    for name, t in ns.most_common(a.top):
        ms = t / 1e6 / a.steps
        print("| `%s` | %.1f | %.3f | %.0f%% |"
              % (name[:80], calls[name] / a.steps, ms, 100 * ms / total))
    print("| all kernels | %.1f | %.3f | |"
          % (sum(calls.values()) / a.steps, total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
