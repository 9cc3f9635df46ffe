#!/usr/bin/env python3
"""Runs the mixed-precision, layout, data-parallel, transpose-folding,
epilogue-fusion, weight-shadow and numerics-check passes in many
configurations over IR files.

usage: check-pass-configurations.py MP_OPT FILE...

Every run must either succeed or fail with a diagnostic (exit 1) that is not
a verifier failure of the pass's own output; no run may crash. Prints one
line per file and a closing count.
"""

import re
import subprocess
import sys
import tempfile

CONFIGS = [
    "--tg-auto-mixed-precision",
    "--tg-auto-mixed-precision=compute-type=bf16",
    "--tg-auto-mixed-precision=level=force-all",
    "--tg-auto-mixed-precision=level=force-all compute-type=bf16",
    "--tg-auto-mixed-precision=level=infer-as-deny",
    "--tg-auto-mixed-precision=change-signature=true",
    "--tg-auto-mixed-precision=target=sm_75 compute-type=bf16",
    "--tg-mixed-precision",
    "--tg-mixed-precision=compute-type=bf16 loss-scaling=static",
    "--tg-mixed-precision=level=force-all",
    "--tg-assign-layout=layout=nhwc",
    "--tg-assign-layout=layout=nchw",
    "--tg-assign-layout=target=cuda",
    "--tg-data-parallel",
    "--tg-data-parallel=bucket-mb=0",
    # A tuple is several passes in a row.
    ("--tg-data-parallel", "--tg-mixed-precision"),
    ("--tg-data-parallel=bucket-mb=0.00005",
     "--tg-mixed-precision=compute-type=bf16 add-deny=tg.all_reduce"),
    ("--tg-data-parallel", "--tg-mixed-precision=level=force-all",
     "--tg-assign-layout=layout=nhwc"),
    ("--tg-insert-loss-scaling=mode=dynamic", "--tg-data-parallel"),
    "--tg-fuse-epilogues",
    "--tg-fuse-epilogues=activation=false residual=false",
    "--tg-fuse-epilogues=scale=false optimizer=false",
    "--tg-fuse-epilogues=bias-grad=false residual=false",
    ("--tg-fold-transposes", "--tg-fuse-epilogues=residual=false"),
    # {dir}: a temporary directory for the reports.
    ("--tg-mixed-precision=compute-type=bf16",
     "--tg-fuse-epilogues=report={dir}/fusion.json"),
    ("--tg-mixed-precision=level=force-all",
     "--tg-assign-layout=layout=nhwc", "--tg-fuse-epilogues=residual=false"),
    ("--tg-data-parallel", "--tg-mixed-precision",
     "--tg-fuse-epilogues", "--tg-check-numerics"),
    "--tg-fold-transposes",
    ("--tg-mixed-precision=compute-type=bf16", "--tg-fold-transposes",
     "--tg-fuse-epilogues"),
    ("--tg-mixed-precision=level=force-all", "--tg-assign-layout=layout=nhwc",
     "--tg-fold-transposes", "--tg-fuse-epilogues", "--tg-check-numerics"),
    "--tg-shadow-weights",
    ("--tg-mixed-precision=compute-type=bf16", "--tg-shadow-weights"),
    ("--tg-mixed-precision", "--tg-fuse-epilogues", "--tg-shadow-weights",
     "--tg-check-numerics"),
    # The runner's order, every pass writing its report.
    ("--tg-mixed-precision=compute-type=bf16",
     "--tg-fold-transposes=report={dir}/transposes.json",
     "--tg-fuse-epilogues=report={dir}/fusion.json",
     "--tg-fold-transposes=report={dir}/transposes2.json",
     "--tg-shadow-weights=report={dir}/shadows.json"),
    ("--tg-mixed-precision=level=force-all",
     "--tg-shadow-weights=report={dir}/shadows.json"),
]
# Errors the passes may legitimately report on some inputs.
EXPECTED = re.compile(r"tg-insert-loss-scaling: (a training step needs|the "
                      r"result of an optimizer update)|tg-data-parallel: (a "
                      r"training step needs optimizer updates|in a "
                      r"loss-scaled step every update)")


def main():
    tool, files = sys.argv[1], sys.argv[2:]
    bad = 0
    reports = tempfile.TemporaryDirectory()
    for path in files:
        problems = []
        for config in CONFIGS:
            passes = list(config) if isinstance(config, tuple) else [config]
            passes = [p.replace("{dir}", reports.name) for p in passes]
            r = subprocess.run([tool, path, "--split-input-file"] + passes +
                               ["-o", "/dev/null"], capture_output=True,
                               text=True, timeout=120)
            crashed = r.returncode < 0 or "Stack dump" in r.stderr
            invalid = r.returncode != 0 and not EXPECTED.search(r.stderr)
            if crashed or invalid:
                first = next((l for l in r.stderr.splitlines()
                              if "error" in l), r.stderr[:200])
                problems.append(f"{' '.join(passes)}: {first}")
        bad += bool(problems)
        name = path.rsplit("/", 1)[-1]
        print(f"{name}: " + ("ok" if not problems else
                             "FAIL\n  " + "\n  ".join(problems)))
    print(f"{len(files) - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
