#!/usr/bin/env python3
"""Checks that a pass's JSON report agrees with itself and the IR.

usage: check-pass-report.py {fusion,transposes,shadows} REPORT [--ir OUT.mlir]

fusion (tg-fuse-epilogues): the totals are the sums of the per-matmul
decisions (ops folded = epilogue ops + bias gradients), every fused
decision says what fused and every unfused one why. With --ir, the output
holds as many tg.matmul ops as the report left unfused and at least as many
tg.fused_matmul ops as it fused.

transposes (tg-fold-transposes): the totals are the sums of the
per-transpose decisions; an erased transpose was folded into a matmul
operand or computed as a swapped product, a kept one names what still reads
it. With --ir, the output holds at least as many tg.transpose ops as the
report kept (the pass also keeps those that had no reader).

shadows (tg-shadow-weights): the totals are the sums of the per-parameter
decisions; a shadowed parameter names its shadow, its type, its update and
the casts it replaced, every other one why it has none. With --ir, the
output gives each shadow a state argument marked tg.shadow_of and returns
an update for it.

Prints one summary line for FileCheck, with every disagreement on stderr,
and exits non-zero on any.
"""

import argparse
import json
import re
import sys


def check_fusion(report, ir, error):
    decisions = report["decisions"]
    fused = [d for d in decisions if d["fused"]]
    bias_grads = sum(1 for d in decisions if "bias_grad_of" in d)
    folded = sum(len(d.get("epilogue", [])) for d in decisions) + bias_grads
    totals = {"matmuls": len(decisions), "fused": len(fused),
              "bias_grads": bias_grads, "ops_folded": folded}
    for d in decisions:
        where = f"{d['location']} ({d['function']})"
        if d["fused"] and not (d.get("epilogue") or "read_unscaled" in d or
                               "bias_grad_of" in d):
            error(f"{where}: fused, but nothing joined it")
        if not d["fused"] and d.get("epilogue"):
            error(f"{where}: not fused, yet it lists an epilogue")
        if not d["fused"] and "reason" not in d and "stopped_before" not in d:
            error(f"{where}: not fused, and no reason given")
    if ir is not None:
        left = len(re.findall(r"= tg\.matmul ", ir))
        made = len(re.findall(r"= tg\.fused_matmul ", ir))
        if left != len(decisions) - len(fused):
            error(f"the IR keeps {left} tg.matmul ops, the report "
                  f"{len(decisions) - len(fused)}")
        if made < len(fused):
            error(f"the IR has {made} tg.fused_matmul ops, fewer than the "
                  f"{len(fused)} fused")
    summary = (f"{len(decisions)} matmuls, {len(fused)} fused, {folded} ops "
               f"folded, {bias_grads} bias gradients")
    return totals, summary


def check_transposes(report, ir, error):
    decisions = report["decisions"]
    erased = [d for d in decisions if d["erased"]]
    swapped = [d for d in decisions if "product_swapped" in d]
    folded = sum(d.get("operands_folded", 0) for d in decisions)
    totals = {"transposes": len(decisions), "erased": len(erased),
              "products_swapped": len(swapped), "operands_folded": folded}
    for d in decisions:
        where = f"{d['location']} ({d['function']})"
        if d["erased"] and not ("product_swapped" in d or
                                d.get("operands_folded", 0) > 0):
            error(f"{where}: erased, but neither folded nor swapped")
        if d["erased"] == ("kept_for" in d):
            error(f"{where}: erased and kept_for disagree")
        if not d["erased"] and not d.get("kept_for"):
            error(f"{where}: kept, but nothing reads it")
        if "product_swapped" in d and "product_not_swapped" in d:
            error(f"{where}: both swapped and not swapped")
    if ir is not None:
        left = len(re.findall(r"= tg\.transpose ", ir))
        if left < len(decisions) - len(erased):
            error(f"the IR holds {left} tg.transpose ops, fewer than the "
                  f"{len(decisions) - len(erased)} kept")
    summary = (f"{len(decisions)} transposes, {len(erased)} erased, "
               f"{len(swapped)} products swapped, {folded} operands folded")
    return totals, summary


def check_shadows(report, ir, error):
    decisions = report["decisions"]
    shadowed = [d for d in decisions if d["shadowed"]]
    replaced = sum(d.get("casts_replaced", 0) for d in shadowed)
    totals = {"params": len(decisions), "shadows": len(shadowed),
              "casts_replaced": replaced}
    for d in decisions:
        where = f"{d['param']} ({d['function']})"
        if d["shadowed"]:
            missing = [k for k in ("shadow", "shadow_type", "update",
                                   "casts_replaced") if k not in d]
            if missing or d["casts_replaced"] < 1:
                error(f"{where}: shadowed, but {missing or 'no cast'}")
            if "reason" in d:
                error(f"{where}: shadowed, yet a reason is given")
        elif not d.get("reason"):
            error(f"{where}: no shadow, and no reason given")
    if ir is not None:
        args = set(re.findall(r'(\S+) \{tg\.shadow_of = "([^"]*)", '
                              r'tg\.state = "([^"]*)"\}', ir))
        updates = set(re.findall(r'\{tg\.update = "([^"]*)"\}', ir))
        for d in shadowed:
            if ((d["shadow_type"], d["param"], d["shadow"]) not in args or
                    d["shadow"] not in updates):
                error(f"{d['param']} ({d['function']}): the IR has no shadow "
                      f"argument {d['shadow']} with its update")
    summary = (f"{len(decisions)} parameters, {len(shadowed)} shadows, "
               f"{replaced} casts replaced, {len(report['steps_kept'])} "
               "steps kept")
    return totals, summary


CHECKS = {"fusion": check_fusion, "transposes": check_transposes,
          "shadows": check_shadows}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=sorted(CHECKS))
    ap.add_argument("report")
    ap.add_argument("--ir")
    a = ap.parse_args()
    with open(a.report) as f:
        report = json.load(f)
    ir = None
    if a.ir:
        with open(a.ir) as f:
            ir = f.read()
    errors = []
    totals, summary = CHECKS[a.kind](report, ir, errors.append)
    for key, want in totals.items():
        if report[key] != want:
            errors.append(f"{key}: the report says {report[key]}, the "
                          f"decisions {want}")
    for e in errors:
        print("error:", e, file=sys.stderr)
    print(summary + (": inconsistent" if errors else ": consistent")
          + (" with the IR" if ir is not None and not errors else ""))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
