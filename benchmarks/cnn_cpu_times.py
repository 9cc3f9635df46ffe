#!/usr/bin/env python3
"""CPU step times of convolutional networks under FP32 and AMP.

Through mp-runner on the CPU backend, in one run of this script:

* single convolution layers (forward, both gradients and an SGD update:
  the training step of a one-layer model whose logits are the global
  average of the convolution) at ResNet-like shapes;
* the ResNet-style example (examples/resnet.mlir) with Adam;

each with --amp=off, f16 and bf16, through oneDNN and, for comparison,
through the runtime's reference loops (MP_REFERENCE_KERNELS=1). Reports the
mean step time (first step excluded) and ratios within the run, and the
machine.

usage: benchmarks/cnn_cpu_times.py [--build build] [--steps 20]
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LAYERS = [
    # name, batch, channels in, out, size, kernel, stride
    ("conv3x3 64->64 @32x32", 8, 64, 64, 32, 3, 1),
    ("conv3x3 128->128 @16x16", 8, 128, 128, 16, 3, 1),
    ("conv1x1 64->128 /2 @32x32", 8, 64, 128, 32, 1, 2),
]


def layer_model(batch, cin, cout, size, k, stride):
    """One convolution, then global average pooling to `cout` logits."""
    pad = k // 2
    out = (size + 2 * pad - k) // stride + 1
    x = f"tensor<{batch}x{cin}x{size}x{size}xf32>"
    w = f"tensor<{cout}x{cin}x{k}x{k}xf32>"
    y = f"tensor<{batch}x{cout}x{out}x{out}xf32>"
    logits = f"tensor<{batch}x{cout}xf32>"
    return f"""func.func @layer(%x: {x} {{tg.input = "x"}},
    %w: {w} {{tg.param = "conv.weight"}},
    %labels: tensor<{batch}xi32> {{tg.label = "labels"}})
    -> ({logits} {{tg.output = "logits"}}) attributes {{tg.forward}} {{
  %y = tg.conv2d %x, %w strides = [{stride}, {stride}] padding = [{pad}, {pad}, {pad}, {pad}] dilations = [1, 1] groups = 1 : ({x}, {w}) -> {y} loc("conv")
  %l = tg.reduce_mean %y axes = [2, 3] : ({y}) -> {logits} loc("pool")
  return %l : {logits}
}}
"""


def step_ms(runner, model, amp, steps, reference, extra=()):
    env = dict(os.environ)
    if reference:
        env["MP_REFERENCE_KERNELS"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "s.json")
        cmd = [runner, model, "--backend=cpu", "--amp=" + amp, "--steps",
               str(steps), "--no-progress", "--eval-samples", "64",
               "--train-samples", "256", "--summary", summary, *extra]
        out = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if out.returncode:
            sys.exit(" ".join(cmd) + "\n" + out.stderr)
        with open(summary) as f:
            return json.load(f)["runs"][0]["mean_step_ms"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--steps", type=int, default=20)
    a = p.parse_args()
    runner = os.path.join(a.build, "bin", "mp-runner")
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    print("machine: %s, %d cores" % (cpu, os.cpu_count()))
    print("| model | path | fp32 ms | f16 ms | bf16 ms | f16 / fp32 | "
          "bf16 / fp32 | loops / oneDNN (fp32) |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        models = []
        for name, *shape in LAYERS:
            path = os.path.join(tmp, name.split()[0] + str(len(models)) +
                                ".mlir")
            with open(path, "w") as f:
                f.write(layer_model(*shape))
            models.append((name, path, ["--optimizer=sgd"]))
        models.append(("resnet.mlir (Adam)",
                       os.path.join(ROOT, "examples", "resnet.mlir"),
                       ["--optimizer=adam"]))
        for name, path, extra in models:
            times = {}
            for reference in (False, True):
                for amp in ("off", "f16", "bf16"):
                    times[(reference, amp)] = step_ms(
                        runner, path, amp, a.steps, reference, extra)
            for reference in (False, True):
                t = lambda amp: times[(reference, amp)]
                print("| %s | %s | %.2f | %.2f | %.2f | %.2fx | %.2fx | %s |"
                      % (name, "loops" if reference else "oneDNN", t("off"),
                         t("f16"), t("bf16"), t("f16") / t("off"),
                         t("bf16") / t("off"),
                         "%.1fx" % (times[(True, "off")] /
                                    times[(False, "off")])
                         if reference else ""))


if __name__ == "__main__":
    main()
