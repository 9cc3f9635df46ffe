#!/usr/bin/env python3
"""Step-time ratios that the machine's slow spells do not move: paired steps.

The 2-core VMs this project measures on change speed by up to 2.5x, in
spells of seconds to minutes. Runs timed one after another, even in rounds
(torch_cpu_steps.py --rounds), can fall into different spells, and their
ratio then moves with the spells. This script compares steps that ran
seconds apart instead:

  * mp against PyTorch, per precision: mp-runner and torch_steps.py train
    the same exported model (torch_cpu_steps.py's models, sizes and data),
    each a process that prints every step's time as it ends. They never run
    at once: the script lets them run in turn, --slice seconds each
    (SIGCONT, then SIGSTOP), for --seconds in all. Each slice's first step
    is left out (it straddles the pause). Slice k of mp and slice k of
    PyTorch are adjacent in time; each such pair gives the ratio of their
    median step times, and the table reports the median of those ratios
    with its quartiles. FP32 runs against PyTorch fp32, AMP-bf16 against
    torch.autocast bf16.
  * mp AMP-bf16 against mp FP32: mp-runner --compare trains both from the
    same initialisation and alternates them step by step in one process,
    so each step pairs with its neighbour; the table reports the median of
    the per-step ratios (FP32 ms / AMP-bf16 ms) with its quartiles.

Both processes of a pair are resident at once (the memory of both models).
The quartiles show how far the pairs spread: a ratio whose quartiles
straddle a goal has not settled it. Steps must be well under --slice (the
default suits the default sizes; give --slice 20 at the published sizes).

With --no-torch the PyTorch side and the export are left out, and only
the models given with --onnx (any model mp-runner trains on synthetic
data) are paired, AMP-bf16 against FP32.

With --baseline-runner PATH, this build's mp-runner is also paired with
another one (an earlier build's, or a distribution's bin/mp-runner) on
every model and precision, the same way: the table reports this build's
median step over the baseline's, per slice pair (below 1: this build is
faster).

usage: benchmarks/paired_steps.py [--build build] [--python PY]
                                  [--models bert,gpt2,resnet50,vit]
                                  [--precisions fp32,bf16] [--seconds 40]
                                  [--slice 2] [--compare-steps 30]
                                  [--onnx MODEL.onnx ...] [--no-torch]
                                  [--baseline-runner PATH]
                                  [--batch B] [--seq T] [--hidden H] ...

MP_CPU_ISA=avx2 DNNL_MAX_CPU_ISA=AVX2 in the environment caps both sides
as in torch_cpu_steps.py.
"""

import argparse
import json
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_cpu_steps import HELPER, ROOT, torch_python  # noqa: E402

SIZES = ("batch", "seq", "hidden", "layers", "heads", "vocab", "image")


class Stepper:
    """A training process that prints a line per step; `parse` takes a line
    to its step's ms (None for other lines)."""

    def __init__(self, name, cmd, parse, log):
        self.name = name
        self.parse = parse
        self.buffer = b""
        self.log = log
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                     stderr=log, start_new_session=True)
        self.fd = self.proc.stdout.fileno()
        self.slices = []

    def read(self, seconds):
        """The step times that arrive within `seconds`."""
        steps = []
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                break
            chunk = os.read(self.fd, 65536)
            if not chunk:
                self.log.seek(0)
                err = self.log.read().decode(errors="replace")
                sys.exit("paired_steps.py: %s ended early:\n%s" %
                         (self.name, err[-2000:]))
            self.buffer += chunk
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                ms = self.parse(line.decode(errors="replace"))
                if ms is not None:
                    steps.append(ms)
        return steps

    def signal(self, sig):
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:  # it has ended
            pass

    def start(self):
        """Waits for the first step (imports, compilation, warm-up), then
        pauses the process."""
        deadline = time.monotonic() + 900
        while not self.read(1.0):
            if time.monotonic() > deadline:
                sys.exit("paired_steps.py: %s took no step in 900 s" %
                         self.name)
        self.pause()

    def pause(self):
        self.signal(signal.SIGSTOP)
        # What it wrote before it stopped belongs to this slice.
        return self.read(0.1)

    def run_slice(self, seconds):
        self.signal(signal.SIGCONT)
        steps = self.read(seconds)
        steps += self.pause()
        # The first step began before the pause that ended with this slice.
        self.slices.append(steps[1:])

    def stop(self):
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGKILL)
        self.proc.wait()


def mp_step(line, header=[False]):
    """mp-runner's per-step line (--log-every 1): the step number first, the
    ms last, after the header that names the columns."""
    if "ms/step" in line:
        header[0] = True
        return None
    m = re.match(r"^\s+\d+\s.*\s(\d+\.\d+)$", line)
    return float(m.group(1)) if header[0] and m else None


def torch_step(line):
    m = re.match(r"^step (\d+\.\d+)$", line)
    return float(m.group(1)) if m else None


def quartiles(xs):
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return q[0], statistics.median(xs), q[2]


def mp_command(runner, model, precision, batch):
    """mp-runner training `model` without end, printing every step."""
    amp = "off" if precision == "fp32" else "bf16"
    return [runner, model, "--backend=cpu", "--amp=" + amp, "--batch-size",
            str(batch), "--steps", "1000000", "--no-progress", "--log-every",
            "1", "--eval-samples", str(batch), "--train-samples",
            str(4 * batch)]


def pair(first, second, name, precision, a, tmp):
    """Two (label, command, parse) processes in turn; returns a table row,
    the ratios second / first, or None."""
    logs = [open(os.path.join(tmp, n + ".log"), "w+b") for n in ("a", "b")]
    one = Stepper(first[0], first[1], first[2], logs[0])
    try:
        one.start()
        two = Stepper(second[0], second[1], second[2], logs[1])
        try:
            two.start()
            end = time.monotonic() + a.seconds
            while time.monotonic() < end:
                one.run_slice(a.slice)
                two.run_slice(a.slice)
        finally:
            two.stop()
    finally:
        one.stop()
    ratios = [statistics.median(t) / statistics.median(m)
              for m, t in zip(one.slices, two.slices) if m and t]
    if not ratios:
        print("%s %s: no slice held a whole step; give a longer --slice" %
              (name, precision))
        return None
    one_ms = [x for s in one.slices for x in s]
    two_ms = [x for s in two.slices for x in s]
    lo, med, hi = quartiles(ratios)
    return (name, precision, len(ratios), min(len(s) for s in one.slices),
            min(one_ms), statistics.median(one_ms), min(two_ms),
            statistics.median(two_ms), med, lo, hi)


def pair_with_torch(runner, python, name, model, precision, sizes, batch, a,
                    tmp):
    """mp and PyTorch in turn; returns a table row or None."""
    torch_cmd = [python, HELPER, "time", name, precision, "--steps",
                 "1000000", "--stream"] + sizes
    return pair(("mp-runner", mp_command(runner, model, precision, batch),
                 lambda l, h=[False]: mp_step(l, h)),
                ("torch_steps.py", torch_cmd, torch_step), name, precision,
                a, tmp)


def pair_with_baseline(runner, baseline, name, model, precision, batch, a,
                       tmp):
    """The baseline mp-runner and this build's in turn; returns a table row
    (baseline first) or None."""
    return pair(("baseline mp-runner",
                 mp_command(baseline, model, precision, batch),
                 lambda l, h=[False]: mp_step(l, h)),
                ("mp-runner", mp_command(runner, model, precision, batch),
                 lambda l, h=[False]: mp_step(l, h)), name, precision, a, tmp)


def pair_precisions(runner, name, model, batch, steps, tmp):
    """mp-runner --compare --amp=bf16: FP32 and AMP-bf16 step by step."""
    summary = os.path.join(tmp, "compare.json")
    cmd = [runner, model, "--backend=cpu", "--compare", "--amp=bf16",
           "--batch-size", str(batch), "--steps", str(steps + 1),
           "--no-progress", "--eval-samples", str(batch), "--train-samples",
           str(4 * batch), "--summary", summary]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit("mp-runner failed: %s\n%s" % (" ".join(cmd), out.stderr))
    with open(summary) as f:
        runs = json.load(f)["runs"]
    fp32, amp = runs[0]["step_ms"][1:], runs[1]["step_ms"][1:]
    lo, med, hi = quartiles([x / y for x, y in zip(fp32, amp)])
    return (name, len(fp32), statistics.median(fp32), statistics.median(amp),
            med, lo, hi)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--python", help="a Python with torch and transformers")
    p.add_argument("--models", default="bert,gpt2,resnet50,vit")
    p.add_argument("--precisions", default="fp32,bf16")
    p.add_argument("--seconds", type=float, default=40,
                   help="per model and precision, both sides together")
    p.add_argument("--slice", type=float, default=2,
                   help="seconds each side runs in a turn")
    p.add_argument("--compare-steps", type=int, default=30,
                   help="steps of mp-runner --compare (0: none)")
    p.add_argument("--onnx", action="append", default=[],
                   help="also pair AMP-bf16 against FP32 on this model "
                        "(repeatable; no PyTorch side)")
    p.add_argument("--no-torch", action="store_true",
                   help="leave PyTorch out: only the --onnx models")
    p.add_argument("--baseline-runner",
                   help="also pair this build's mp-runner with this one")
    for size in SIZES:
        p.add_argument("--" + size, type=int)
    a = p.parse_args()
    if a.slice <= 0 or a.seconds < 2 * a.slice:
        sys.exit("paired_steps.py: --seconds must hold a slice of each side")
    if a.no_torch and (not a.onnx or
                       (a.compare_steps <= 0 and not a.baseline_runner)):
        sys.exit("paired_steps.py: --no-torch needs --onnx models and "
                 "--compare-steps above 0 or --baseline-runner")
    if a.baseline_runner and not os.access(a.baseline_runner, os.X_OK):
        sys.exit("paired_steps.py: no executable at --baseline-runner %s" %
                 a.baseline_runner)
    for model in a.onnx:
        if not os.path.isfile(model):
            sys.exit("paired_steps.py: no model at %s" % model)
    precisions = a.precisions.split(",")
    if any(x not in ("fp32", "bf16") for x in precisions):
        sys.exit("paired_steps.py: --precisions takes fp32 and bf16")
    runner = os.path.join(a.build, "bin", "mp-runner")
    if not os.access(runner, os.X_OK):
        sys.exit("paired_steps.py: no mp-runner in %s" % a.build)
    python = None
    if not a.no_torch:
        python, why = torch_python(a.build, a.python)
        if python is None:
            sys.exit("paired_steps.py: " + why)
    info = subprocess.run([runner, "--device-info"], capture_output=True,
                          text=True).stdout
    cpu = re.search(r"^CPU: (.+)$", info, re.M)
    print("machine: %s, %d cores" % (cpu.group(1) if cpu else "?",
                                     os.cpu_count()))
    for line in info.splitlines():
        if line.startswith("  AVX2") or line.startswith("CPU backend"):
            print("  " + line.strip())
    sizes = []
    for size in SIZES:
        if getattr(a, size) is not None:
            sizes += ["--" + size, str(getattr(a, size))]
    batch = a.batch or 8
    versus, amp, builds = [], [], []

    def keep(rows, row, ratio):
        """Keeps a pairing's row (none when no slice held a step) and
        reports it as it comes."""
        if row:
            rows.append(row)
            print("  %s %s: %s %.3f (%.3f-%.3f) over %d slice pairs" %
                  (row[0], row[1], ratio, row[8], row[9], row[10], row[2]),
                  flush=True)

    def against_baseline(name, model):
        for precision in precisions if a.baseline_runner else []:
            keep(builds, pair_with_baseline(runner, a.baseline_runner, name,
                                            model, precision, batch, a, tmp),
                 "this build / baseline")

    with tempfile.TemporaryDirectory() as tmp:
        for model in a.onnx:
            name = os.path.splitext(os.path.basename(model))[0]
            against_baseline(name, model)
            if a.compare_steps > 0:
                amp.append(pair_precisions(runner, name, model, batch,
                                           a.compare_steps, tmp))
        for name in ([] if a.no_torch else a.models.split(",")):
            model = os.path.join(tmp, name + ".onnx")
            subprocess.run([python, HELPER, "export", name, model] + sizes,
                           check=True, capture_output=True)
            for precision in precisions:
                keep(versus, pair_with_torch(runner, python, name, model,
                                             precision, sizes, batch, a, tmp),
                     "PyTorch / mp")
            against_baseline(name, model)
            if a.compare_steps > 0:
                amp.append(pair_precisions(runner, name, model, batch,
                                           a.compare_steps, tmp))
    if versus:
        print()
        print("mp against PyTorch eager, in turns of %g s for %g s: "
              "PyTorch's median step over mp's, per slice pair" %
              (a.slice, a.seconds))
        print()
        print("| model | precision | slice pairs (min mp steps in one) | mp "
              "ms min / median | PyTorch ms min / median | PyTorch / mp: "
              "median (quartiles) |")
        print("|---|---|---|---|---|---|")
        for r in versus:
            print("| %s | %s | %d (%d) | %.4g / %.4g | %.4g / %.4g | %.3f "
                  "(%.3f-%.3f) |" % r)
    if builds:
        print()
        print("this build's mp-runner against %s, in turns of %g s for %g s: "
              "this build's median step over the baseline's, per slice pair"
              % (a.baseline_runner, a.slice, a.seconds))
        print()
        print("| model | precision | slice pairs (min baseline steps in one) "
              "| baseline ms min / median | this build ms min / median | "
              "this build / baseline: median (quartiles) |")
        print("|---|---|---|---|---|---|")
        for r in builds:
            print("| %s | %s | %d (%d) | %.4g / %.4g | %.4g / %.4g | %.3f "
                  "(%.3f-%.3f) |" % r)
    if amp:
        print()
        print("mp AMP-bf16 against mp FP32, step by step (mp-runner "
              "--compare): FP32 ms over AMP-bf16 ms, per step")
        print()
        print("| model | steps | FP32 median ms | AMP-bf16 median ms | FP32 / "
              "AMP-bf16: median (quartiles) |")
        print("|---|---|---|---|---|")
        for r in amp:
            print("| %s | %d | %.4g | %.4g | %.3f (%.3f-%.3f) |" % r)


if __name__ == "__main__":
    main()
