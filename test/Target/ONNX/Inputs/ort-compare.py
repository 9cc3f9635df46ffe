"""Writes an ONNX backend-test directory whose expected outputs come from
onnxruntime, for mp-onnx-test to compare mp's outputs with.

usage: ort-compare.py <venv> <model.onnx> <test dir> [--batch N] [--seed S]
                      [--int NAME=LO:HI ...] [--dim NAME=SIZE ...]

<test dir> gets model.onnx (the model with its symbolic dimensions fixed to
--batch) and test_data_set_0/ with random inputs (input_<k>.pb: floats
normal, integers uniform in --int's range, [0, 2) by default) and
onnxruntime's outputs (output_<k>.pb). onnxruntime runs in <venv>, a
virtual environment this script makes on first use (with the system's onnx
and numpy visible, and onnxruntime from PyPI); concurrent tests share it
under a lock.
"""

import argparse
import fcntl
import os
import random
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

RUN_ORT = """
import sys
import numpy as np
import onnxruntime as ort
session = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
inputs = {i.name: np.load(p) for i, p in zip(session.get_inputs(), sys.argv[3:])}
for k, value in enumerate(session.run(None, inputs)):
    np.save("%s/ort_output_%d.npy" % (sys.argv[2], k), value)
"""


def ensure_venv(venv):
    python = os.path.join(venv, "bin", "python")
    os.makedirs(os.path.dirname(os.path.abspath(venv)), exist_ok=True)
    with open(os.path.abspath(venv) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        probe = [python, "-c", "import onnxruntime"]
        if os.path.exists(python) and subprocess.run(
                probe, capture_output=True).returncode == 0:
            return python
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages",
                        venv], check=True)
        subprocess.run([python, "-m", "pip", "install", "--quiet",
                        "--disable-pip-version-check", "onnxruntime"],
                       check=True)
    return python


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("venv")
    parser.add_argument("model")
    parser.add_argument("dir")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--dim", action="append", default=[],
                        help="NAME=SIZE: a named symbolic dimension's size "
                        "(the others of the inputs get --batch)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--int", action="append", default=[],
                        metavar="NAME=LO:HI",
                        help="integer input NAME drawn from [LO, HI) "
                             "(default [0, 2): a mask)")
    args = parser.parse_args()
    ranges = {}
    for spec in args.int:
        name, bounds = spec.split("=")
        lo, hi = bounds.split(":")
        ranges[name] = (int(lo), int(hi))
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    print("seed", seed)
    rng = np.random.default_rng(seed)

    model = onnx.load(args.model)
    # The first dimension is the batch; other symbolic dimensions of the
    # outputs (an exporter's names for [B, T, V]) are left to inference.
    named = dict(spec.split("=") for spec in args.dim)
    for v in list(model.graph.input) + list(model.graph.output):
        for k, d in enumerate(v.type.tensor_type.shape.dim):
            if d.HasField("dim_value"):
                continue
            if d.dim_param in named:
                d.dim_value = int(named[d.dim_param])
            elif k == 0 or v in model.graph.input:
                d.dim_value = args.batch
            else:
                d.ClearField("dim_param")
    data = os.path.join(args.dir, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    path = os.path.join(args.dir, "model.onnx")
    onnx.save(model, path)

    initializers = {t.name for t in model.graph.initializer}
    npys = []
    inputs = [v for v in model.graph.input if v.name not in initializers]
    for k, v in enumerate(inputs):
        shape = [d.dim_value for d in v.type.tensor_type.shape.dim]
        elem = v.type.tensor_type.elem_type
        if elem in (onnx.TensorProto.INT64, onnx.TensorProto.INT32):
            lo, hi = ranges.get(v.name, (0, 2))
            value = rng.integers(lo, hi, shape).astype(
                np.int64 if elem == onnx.TensorProto.INT64 else np.int32)
        else:
            value = rng.standard_normal(shape).astype(np.float32)
        npy = os.path.join(data, "input_%d.npy" % k)
        np.save(npy, value)
        npys.append(npy)
        tensor = numpy_helper.from_array(value, v.name)
        with open(os.path.join(data, "input_%d.pb" % k), "wb") as f:
            f.write(tensor.SerializeToString())

    python = ensure_venv(args.venv)
    subprocess.run([python, "-c", RUN_ORT, path, data] + npys, check=True)
    for k, v in enumerate(model.graph.output):
        value = np.load(os.path.join(data, "ort_output_%d.npy" % k))
        tensor = numpy_helper.from_array(value, v.name)
        with open(os.path.join(data, "output_%d.pb" % k), "wb") as f:
            f.write(tensor.SerializeToString())
    print("onnxruntime outputs written to", data)


if __name__ == "__main__":
    sys.exit(main())
