#!/usr/bin/env python3
"""Checks the precision of named ops in a tg-auto-mixed-precision report.

usage: check-report-pins.py REPORT NAME=PRECISION...

Every op whose location name is NAME must report PRECISION (f32, f16 or
bf16). Prints one line per name; exits 1 on any mismatch or unknown name.
"""

import json
import sys


def main():
    report = json.load(open(sys.argv[1]))
    ops = [op for f in report["functions"] for op in f["ops"]]
    ok = True
    for spec in sys.argv[2:]:
        name, want = spec.split("=")
        found = [op for op in ops if op["name"] == name]
        got = sorted({op["precision"] for op in found})
        good = bool(found) and got == [want]
        ok &= good
        print(f"{name}: {','.join(got) or 'missing'}"
              + ("" if good else f" (expected {want})"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
