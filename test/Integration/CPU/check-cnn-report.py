"""Checks the AMP report of a convolutional network: every convolution and
its gradients in the low type accumulating in f32, every batch norm and its
gradient computing in f32 while reading the low type's activations.

usage: check-cnn-report.py REPORT
"""

import json
import sys

CONVS = {"tg.conv2d"}
CONV_GRADS = {"tg.conv2d_grad_input", "tg.conv2d_grad_filter"}
NORMS = {"tg.batch_norm": 0, "tg.batch_norm_grad": 1}  # activation operand


def main():
    report = json.load(open(sys.argv[1]))
    low = report["compute_type"]
    errors = []
    convs = grads = norms = norm_grads = casts = 0
    for f in report["functions"]:
        casts += f["totals"]["casts_inserted"]
        for op in f["ops"]:
            kind = op["op"]
            if kind in CONVS or kind in CONV_GRADS:
                convs += kind in CONVS
                grads += kind in CONV_GRADS
                if op["precision"] != low or op["compute"] != "f32":
                    errors.append(f"{op['name']}: {kind} in {op['precision']}"
                                  f", accumulating in {op['compute']}")
            if kind in NORMS:
                norms += kind == "tg.batch_norm"
                norm_grads += kind == "tg.batch_norm_grad"
                activation = op["operands"][NORMS[kind]]
                if op["compute"] != "f32" or activation != low:
                    errors.append(f"{op['name']}: {kind} computes in "
                                  f"{op['compute']} on {activation}")
    print(f"{convs} convolutions, {grads} gradients in {low} accumulating in "
          f"f32; {norms} batch norms, {norm_grads} gradients computing in f32 "
          f"on {low} activations; {casts} casts")
    for e in errors:
        print("error:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
