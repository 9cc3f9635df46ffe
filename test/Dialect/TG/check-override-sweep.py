#!/usr/bin/env python3
"""Pins every named op of training steps to f32 and to low precision.

usage: check-override-sweep.py MP_OPT GENERATOR WORKDIR FILE...

For each FILE, and for steps made by GENERATOR at several sizes, the default
AMP report lists the ops the pass reasons about. Then, one mp-opt run each:

  * every op name pinned to f32, and separately to f16, with a policy
    override ({"name": ...});
  * every layer (the first component of the names) pinned by a glob
    ({"pattern": "fc1.*"}) to f32 and to the low type, and "*" for all;
  * every op type put on each of the four lists (add-allow=tg.add, ...);
  * the levels and targets.

Each run must exit 0 (mp-opt verifies the pass's output) and the report must
show every op matched by a pin with that precision, computing in f32 (or
nothing) when pinned to f32. A sample of the pinned steps is also lowered to
the LLVM dialect through the whole pipeline. Prints one line per step and a
closing count; exits 1 on any failure.
"""

import concurrent.futures
import fnmatch
import json
import os
import subprocess
import sys

LOW_TYPES = ["f16", "bf16"]
LISTS = ["allow", "infer", "clear", "deny"]


def run_amp(tool, path, options, workdir, tag, lower=False):
    """Runs the AMP pass; returns (error text or None, report or None)."""
    report = os.path.join(workdir, tag + ".json")
    opts = " ".join(options + [f"report={report}"])
    cmd = [tool, path]
    if lower:
        cmd += [f"--tg-mixed-precision={' '.join(options)}",
                "--tg-lower-to-llvm"]
        report = None
    else:
        cmd += [f"--tg-auto-mixed-precision={opts}"]
    r = subprocess.run(cmd + ["-o", os.devnull], capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0:
        first = next((l for l in r.stderr.splitlines() if "error" in l),
                     r.stderr[:300])
        return f"exit {r.returncode}: {first}", None
    if report is None:
        return None, None
    with open(report) as f:
        data = json.load(f)
    os.unlink(report)
    return None, data


def ops_of(report):
    return [op for fn in report["functions"] for op in fn["ops"]]


class Sweep:
    def __init__(self, tool, workdir):
        self.tool = tool
        self.workdir = workdir
        self.counter = 0

    def tag(self):
        self.counter += 1
        return f"run{self.counter}"

    def pin(self, path, low, key, value, precision, lower):
        """One pin; returns a problem description or None."""
        tag = self.tag()
        policy = os.path.join(self.workdir, tag + ".policy.json")
        with open(policy, "w") as f:
            json.dump({"overrides": [{key: value, "precision": precision}]}, f)
        options = [f"compute-type={low}", f"policy={policy}"]
        error, report = run_amp(self.tool, path, options, self.workdir, tag)
        what = f"{key} {value!r} -> {precision} ({low})"
        if error:
            return f"{what}: {error}"
        matched = [op for op in ops_of(report)
                   if (op["name"] == value if key == "name"
                       else fnmatch.fnmatchcase(op["name"], value))]
        if not matched:
            return f"{what}: the report shows no op it matched"
        want = "f32" if precision == "f32" else low
        for op in matched:
            if op["precision"] != want or not op["rule"].startswith(
                    "user override"):
                return (f"{what}: {op['name']} ({op['op']}) reports "
                        f"{op['precision']} by rule '{op['rule']}'")
            if want == "f32" and op["compute"] not in ("f32", "none"):
                return (f"{what}: {op['name']} ({op['op']}) is pinned to "
                        f"f32 but computes in {op['compute']}")
        if lower:
            error, _ = run_amp(self.tool, path, options, self.workdir, tag,
                               lower=True)
            if error:
                return f"{what}, lowered: {error}"
        os.unlink(policy)
        return None

    def options(self, path, options):
        error, _ = run_amp(self.tool, path, options, self.workdir, self.tag())
        return f"{' '.join(options)}: {error}" if error else None


def sweep_file(sweep, pool, path):
    error, base = run_amp(sweep.tool, path, [], sweep.workdir, sweep.tag())
    if error:
        return 0, [f"default run: {error}"]
    names = sorted({op["name"] for op in ops_of(base)})
    op_types = sorted({op["op"] for op in ops_of(base)})
    layers = sorted({n.split(".")[0] for n in names if "." in n})
    jobs = []
    for low in LOW_TYPES:
        # Single names with f16; bf16 takes the same decisions, so it gets
        # the layer patterns, lists and levels only.
        for i, name in enumerate(names if low == "f16" else []):
            for precision in ("f32", low):
                # Lower a sample (every fourth name) through the pipeline.
                jobs.append(pool.submit(sweep.pin, path, low, "name", name,
                                        precision, i % 4 == 0))
        for layer in layers + ["*"]:
            pattern = layer if layer == "*" else layer + ".*"
            for precision in ("f32", low):
                jobs.append(pool.submit(sweep.pin, path, low, "pattern",
                                        pattern, precision, True))
        for op_type in op_types:
            for cls in LISTS:
                jobs.append(pool.submit(
                    sweep.options, path,
                    [f"compute-type={low}", f"add-{cls}={op_type}"]))
        for extra in (["level=force-all"], ["level=infer-as-deny"],
                      ["target=sm_75"], ["target=cpu-avx512bf16"],
                      ["change-signature=true"],
                      ["level=force-all", "change-signature=true"]):
            jobs.append(pool.submit(sweep.options, path,
                                    [f"compute-type={low}"] + extra))
    problems = [p for p in (j.result() for j in jobs) if p]
    return len(jobs), problems


def generate(tool, generator, workdir):
    """Steps of the three models at several sizes: derived by tg-make-train-step
    from the generator's forward functions, and one hand-written."""
    specs = [
        ("mlp", ["--layers", "1", "--batch", "8", "--width", "16"]),
        ("mlp", ["--layers", "3", "--batch", "16", "--inputs", "24",
                 "--width", "40", "--classes", "7", "--momentum", "0.9",
                 "--dropout", "0.3"]),
        ("transformer", ["--layers", "2", "--batch", "1", "--seq", "6",
                         "--d-model", "24", "--heads", "3", "--ffn", "40",
                         "--vocab", "31"]),
        ("resnet", ["--batch", "2", "--image", "8", "--width", "4",
                    "--classes", "5"]),
    ]
    paths = []
    for k, (model, args) in enumerate(specs):
        forward = os.path.join(workdir, f"generated{k}-{model}-forward.mlir")
        out = os.path.join(workdir, f"generated{k}-{model}.mlir")
        subprocess.run([sys.executable, generator, model, *args, "-o",
                        forward], check=True)
        optimizer = {"mlp": "sgd", "transformer": "adamw",
                     "resnet": "adam"}[model]
        subprocess.run([tool, forward, "--mlir-print-debuginfo",
                        f"--tg-make-train-step=optimizer={optimizer}", "-o",
                        out], check=True)
        paths.append(out)
    hand = os.path.join(workdir, "generated-hand-written-mlp.mlir")
    subprocess.run([sys.executable, generator, "mlp", "--layers", "2",
                    "--hand-written", "-o", hand], check=True)
    return paths + [hand]


def main():
    tool, generator, workdir, files = (sys.argv[1], sys.argv[2], sys.argv[3],
                                       sys.argv[4:])
    os.makedirs(workdir, exist_ok=True)
    sweep = Sweep(tool, workdir)
    paths = files + generate(tool, generator, workdir)
    bad = total = 0
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        for path in paths:
            runs, problems = sweep_file(sweep, pool, path)
            total += runs
            bad += bool(problems)
            name = os.path.basename(path)
            if problems:
                print(f"{name}: FAIL ({len(problems)} of {runs} runs)")
                for p in problems[:40]:
                    print("  " + p)
            else:
                print(f"{name}: ok ({runs} runs)")
    print(f"{len(paths) - bad} passed, {bad} failed, {total} runs")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
