#!/usr/bin/env python3
"""Checks a tg-auto-mixed-precision report against the AMP requirements.

usage: check-amp-report.py REPORT --casts N

Every matmul must run in the low type; every softmax, norm, reduction and
loss op (and their gradients) must compute in f32; the pass must have
inserted exactly N casts. Prints one summary line for FileCheck and exits
non-zero on any violation.
"""

import argparse
import json
import sys

F32_OPS = {
    "tg.softmax", "tg.log_softmax", "tg.softmax_grad", "tg.log_softmax_grad",
    "tg.layer_norm", "tg.layer_norm_grad", "tg.reduce_sum", "tg.reduce_mean",
    "tg.reduce_max", "tg.softmax_cross_entropy",
    "tg.softmax_cross_entropy_grad", "tg.mse_loss", "tg.mse_loss_grad",
    "tg.sgd_update", "tg.adam_update",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--casts", type=int, required=True)
    a = ap.parse_args()
    report = json.load(open(a.report))
    low = report["compute_type"]
    errors = []
    for f in report["functions"]:
        matmuls = f32_ops = 0
        for op in f["ops"]:
            if op["op"] == "tg.matmul":
                matmuls += 1
                if op["precision"] != low or op["compute"] != "f32":
                    errors.append(f"{op['name']}: matmul in {op['precision']}")
            if op["op"] in F32_OPS:
                f32_ops += 1
                if op["precision"] != "f32" or op["compute"] != "f32":
                    errors.append(f"{op['name']}: {op['op']} computes in "
                                  f"{op['compute']}")
        t = f["totals"]
        if t["casts_inserted"] != a.casts:
            errors.append(f"{t['casts_inserted']} casts, expected {a.casts}")
        print(f"{f['function']}: {matmuls} matmuls in {low}, {f32_ops} "
              f"softmax/norm/reduction/loss/optimizer ops in f32, "
              f"{t['casts_inserted']} casts, {t['low_precision_ops']} of "
              f"{t['ops']} ops in {low}")
    for e in errors:
        print("error:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
