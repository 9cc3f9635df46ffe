"""Compares the parameters in a safetensors checkpoint with a model's ONNX
initializers of the same name; exits non-zero on a difference.

usage: compare-weights.py <model.onnx> <checkpoint.safetensors> [--atol A]
"""

import argparse
import json
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper

DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16,
          "I32": np.int32, "I64": np.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    base = 8 + size
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] not in DTYPES:
            continue
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(
            data[base + begin:base + end],
            dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
    return tensors


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("checkpoint")
    parser.add_argument("--atol", type=float, default=1e-6)
    args = parser.parse_args()
    saved = read_safetensors(args.checkpoint)
    compared = differ = 0
    for init in onnx.load(args.model).graph.initializer:
        if init.name not in saved:
            continue
        want = numpy_helper.to_array(init).astype(np.float64)
        got = saved[init.name].astype(np.float64)
        compared += 1
        if got.shape != want.shape or np.max(np.abs(got - want)) > args.atol:
            differ += 1
            print("differs:", init.name)
    print("%d parameters compared, %d differ" % (compared, differ))
    return 1 if differ or not compared else 0


if __name__ == "__main__":
    sys.exit(main())
