#!/usr/bin/env python3
"""Checks that a tg-fuse-epilogues report agrees with itself and the IR.

usage: check-fusion-report.py REPORT [--ir FUSED.mlir]

The totals must be the sums of the per-matmul decisions (one decision per
matmul; ops folded = epilogue ops + bias gradients), every fused decision
must say what fused, and every unfused one why. With --ir, the pass's
output must hold as many tg.matmul ops as the report left unfused and at
least as many tg.fused_matmul ops as it fused. Prints one summary line for
FileCheck and exits non-zero on any disagreement.
"""

import argparse
import json
import re
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--ir")
    a = ap.parse_args()
    with open(a.report) as f:
        report = json.load(f)
    decisions = report["decisions"]
    errors = []

    def expect(what, got, want):
        if got != want:
            errors.append(f"{what}: the report says {got}, the decisions {want}")

    fused = [d for d in decisions if d["fused"]]
    expect("matmuls", report["matmuls"], len(decisions))
    expect("fused", report["fused"], len(fused))
    bias_grads = sum(1 for d in decisions if "bias_grad_of" in d)
    expect("bias_grads", report["bias_grads"], bias_grads)
    folded = sum(len(d.get("epilogue", [])) for d in decisions) + bias_grads
    expect("ops_folded", report["ops_folded"], folded)
    for d in decisions:
        where = f"{d['location']} ({d['function']})"
        if d["fused"] and not (d.get("epilogue") or "read_unscaled" in d or
                               "bias_grad_of" in d):
            errors.append(f"{where}: fused, but nothing joined it")
        if not d["fused"] and d.get("epilogue"):
            errors.append(f"{where}: not fused, yet it lists an epilogue")
        if not d["fused"] and "reason" not in d and "stopped_before" not in d:
            errors.append(f"{where}: not fused, and no reason given")
    if a.ir:
        with open(a.ir) as f:
            ir = f.read()
        left = len(re.findall(r"= tg\.matmul ", ir))
        made = len(re.findall(r"= tg\.fused_matmul ", ir))
        if left != len(decisions) - len(fused):
            errors.append(f"the IR keeps {left} tg.matmul ops, the report "
                          f"{len(decisions) - len(fused)}")
        if made < len(fused):
            errors.append(f"the IR has {made} tg.fused_matmul ops, fewer than "
                          f"the {len(fused)} fused")
    for e in errors:
        print("error:", e, file=sys.stderr)
    if errors:
        return 1
    print(f"{len(decisions)} matmuls, {len(fused)} fused, {folded} ops folded, "
          f"{bias_grads} bias gradients: consistent"
          + (" with the IR" if a.ir else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
