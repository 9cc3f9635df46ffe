"""Writes the seed corpora of the fuzz targets that read binary formats.

usage: make-seeds.py OUTDIR

OUTDIR/mp-safetensors-fuzzer: checkpoints as mp-runner writes them (f32,
bf16, f16, i32 and bool tensors, metadata, an empty one); OUTDIR/mp-npy-
fuzzer: arrays as NumPy saves them (each dtype mp reads, 0-d to 3-d,
Fortran order, big-endian, an empty shape). Written with the standard
library alone, so that the fuzz tests need no NumPy. The text formats' seeds
are the suite's own inputs (test/Fuzz/lit.local.cfg).
"""

import json
import os
import struct
import sys


def safetensors(tensors, metadata=None):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (dtype, shape, payload) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def npy(descr, shape, payload, fortran=False):
    header = ("{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }"
              % (descr, fortran, "".join(f"{d}, " for d in shape)))
    header = header.encode()
    pad = -(10 + len(header) + 1) % 64
    header += b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + \
        payload


def floats(fmt, values):
    return b"".join(struct.pack(fmt, v) for v in values)


def bf16(values):
    return b"".join(struct.pack("<f", v)[2:] for v in values)


def main():
    out = sys.argv[1]
    st = os.path.join(out, "mp-safetensors-fuzzer")
    npd = os.path.join(out, "mp-npy-fuzzer")
    os.makedirs(st, exist_ok=True)
    os.makedirs(npd, exist_ok=True)
    seeds = {
        "checkpoint.safetensors": safetensors({
            "fc1.weight": ("F32", [2, 3], floats("<f", range(6))),
            "fc1.bias": ("F32", [3], floats("<f", [0.5, -1, 2])),
            "step": ("I64", [], struct.pack("<q", 1500)),
        }, {"mp.step": "1500", "mp.amp": "bf16"}),
        "mixed.safetensors": safetensors({
            "w": ("BF16", [2, 2], bf16([1, -2, 3.5, 0])),
            "h": ("F16", [3], floats("<e", [1, 0.25, -8])),
            "i": ("I32", [2], struct.pack("<ii", 7, -7)),
            "mask": ("BOOL", [4], bytes([1, 0, 1, 1])),
            "d": ("F64", [1], struct.pack("<d", 3.25)),
        }),
        "empty.safetensors": safetensors({}),
    }
    for name, data in seeds.items():
        open(os.path.join(st, name), "wb").write(data)
    arrays = {
        "f32-2d.npy": npy("<f4", [2, 3], floats("<f", range(6))),
        "f64-1d.npy": npy("<f8", [3], floats("<d", [1, 2, 3])),
        "f16-3d.npy": npy("<f2", [2, 1, 2], floats("<e", [1, 2, 3, 4])),
        "i32.npy": npy("<i4", [4], struct.pack("<4i", 0, 1, 2, 9)),
        "i64-0d.npy": npy("<i8", [], struct.pack("<q", 42)),
        "bool.npy": npy("|b1", [3], bytes([1, 0, 1])),
        "fortran.npy": npy("<f4", [2, 2], floats("<f", range(4)), True),
        "big-endian.npy": npy(">f4", [2], floats(">f", [1, 2])),
        "empty.npy": npy("<f4", [0, 5], b""),
    }
    for name, data in arrays.items():
        open(os.path.join(npd, name), "wb").write(data)


if __name__ == "__main__":
    main()
