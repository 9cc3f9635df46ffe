"""Trains the same steps with the build tree's mp-runner and with the
distribution's, from the same seed, and requires the same loss at every
step, bit for bit: both run the same compiler (LLVM and MLIR linked
statically into libmp.so instead of shared) and the same runtime over the
same oneDNN and OpenBLAS, so any difference is a packaging bug.

usage: compare-with-build.py <build mp-runner> <distribution prefix>
           <source root>
"""

import json
import os
import random
import subprocess
import sys
import tempfile


def losses(runner, model, amp, extra, seed, summary):
    cmd = [runner, model, "--backend=cpu", "--amp=" + amp, "--steps", "20",
           "--seed", str(seed), "--eval-samples", "256", "--no-progress",
           "--summary", summary] + extra
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit("FAIL: %s exited %d:\n%s" % (" ".join(cmd), out.returncode,
                                              out.stderr[-3000:]))
    with open(summary) as f:
        run = json.load(f)["runs"][0]
    return run["losses"], run["accuracy"]


def main():
    build_runner, prefix, source = sys.argv[1:4]
    dist_runner = os.path.join(prefix, "bin", "mp-runner")
    examples = os.path.join(source, "examples")
    cases = [
        ("mlp_step.mlir", os.path.join(examples, "mlp_step.mlir"), []),
        ("transformer_step.mlir",
         os.path.join(examples, "transformer_step.mlir"), []),
        ("resnet.mlir", os.path.join(examples, "resnet.mlir"), []),
        ("transformer.onnx",
         os.path.join(prefix, "share", "mp", "models", "transformer.onnx"),
         ["--batch-size", "8"]),
    ]
    seed = random.randrange(1 << 30)
    print("seed %d" % seed)
    with tempfile.TemporaryDirectory() as tmp:
        for label, model, extra in cases:
            for amp in ("off", "bf16", "f16"):
                a = losses(build_runner, model, amp, extra, seed,
                           os.path.join(tmp, "build.json"))
                b = losses(dist_runner, model, amp, extra, seed,
                           os.path.join(tmp, "dist.json"))
                if a != b:
                    sys.exit("FAIL: %s --amp=%s: the build tree's losses %s, "
                             "accuracy %s; the distribution's %s, %s"
                             % (label, amp, a[0], a[1], b[0], b[1]))
                print("%s --amp=%s: %d losses and the accuracy identical"
                      % (label, amp, len(a[0])))
    print("PASS")


if __name__ == "__main__":
    main()
