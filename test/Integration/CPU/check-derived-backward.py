#!/usr/bin/env python3
"""The derived backward pass trains like the hand-written one.

usage: check-derived-backward.py GENERATOR MP_RUNNER MP_OPT WORKDIR

For the MLP (SGD) and the transformer (AdamW), trains two steps of the same
model for 50 steps from the same initialisation on the same batches: the
hand-written one (`generate-train-step.py --hand-written`) and the one
tg-make-train-step derives from the forward function (mp-runner
differentiates it, with the same optimizer). The losses must agree step by
step within f32 round-off (a relative 1e-4: the two sum the same terms in
different orders). Then the AMP pass must make the same decisions on both:
the same number of low-precision ops among the ops both share, and no more
casts on the derived step. Prints one line per model; exits 1 on a
mismatch.
"""

import json
import os
import random
import subprocess
import sys

MODELS = {
    "mlp": ("--optimizer=sgd --lr=0.1", ["--layers", "2"]),
    "transformer": ("--optimizer=adamw --lr=0.001 --weight-decay=0.01",
                    ["--layers", "2", "--d-model", "32", "--heads", "2",
                     "--ffn", "64", "--seq", "8"]),
}


def losses(log):
    return [json.loads(line)["loss"] for line in open(log)]


def amp_totals(mp_opt, step, report):
    subprocess.run([mp_opt, step, f"--tg-auto-mixed-precision=report={report}",
                    "-o", os.devnull], check=True)
    fn = json.load(open(report))["functions"][0]
    return fn["totals"]


def main():
    generator, runner, mp_opt, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    ok = True
    for model, (optimizer, sizes) in MODELS.items():
        forward = os.path.join(work, f"{model}.mlir")
        hand = os.path.join(work, f"{model}_hand.mlir")
        derived = os.path.join(work, f"{model}_derived.mlir")
        subprocess.run([sys.executable, generator, model, *sizes, "-o",
                        forward], check=True)
        subprocess.run([sys.executable, generator, model, *sizes,
                        "--hand-written", "-o", hand], check=True)
        runs = {}
        for label, path, extra in (("hand", hand, []),
                                   ("derived", forward, optimizer.split())):
            log = os.path.join(work, f"{model}_{label}.jsonl")
            subprocess.run([runner, path, "--steps", "50", "--amp=off",
                            "--backend=cpu", f"--seed={seed}", "--no-progress",
                            "--log", log, *extra], check=True,
                           stdout=subprocess.DEVNULL)
            runs[label] = losses(log)
        worst = max(abs(a - b) / max(abs(a), 1e-30)
                    for a, b in zip(runs["hand"], runs["derived"]))
        same = worst <= 1e-4 and len(runs["hand"]) == len(runs["derived"]) == 50
        ok &= same
        print(f"{model}: losses over 50 steps differ by at most {worst:.1e} "
              f"relative ({runs['hand'][0]:.4f} -> {runs['hand'][-1]:.4f}): "
              f"{'ok' if same else 'FAIL'}")
        # The step the pass derives, as mp-opt writes it.
        opts = " ".join(o.lstrip("-") for o in optimizer.split())
        with open(derived, "w") as f:
            subprocess.run([mp_opt, forward, f"--tg-make-train-step={opts}"],
                           check=True, stdout=f)
        h = amp_totals(mp_opt, hand, os.path.join(work, f"{model}_h.json"))
        d = amp_totals(mp_opt, derived, os.path.join(work, f"{model}_d.json"))
        good = d["casts_inserted"] <= h["casts_inserted"]
        ok &= good
        print(f"{model}: AMP on the hand-written step: {h['ops']} ops, "
              f"{h['low_precision_ops']} low precision, "
              f"{h['casts_inserted']} casts; on the derived step: {d['ops']} "
              f"ops, {d['low_precision_ops']} low precision, "
              f"{d['casts_inserted']} casts: {'ok' if good else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
