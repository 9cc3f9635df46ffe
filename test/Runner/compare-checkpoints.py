"""Compares the parameters of two safetensors checkpoints (mp-runner
--checkpoint): for every tensor both hold, the largest difference relative
to the tensor's largest magnitude. Exits 1 when one exceeds --rtol, or when
the files do not hold the same tensors (amp.* state is skipped unless
--with-amp-state). With --atol A, differences up to A count as none (a
tensor passes when its largest difference is at most R times its largest
magnitude plus A): a parameter whose gradient is zero in exact arithmetic,
such as an attention key's bias, holds only rounding noise (1e-16), whose
relative differences under another summation order mean nothing.

usage: compare-checkpoints.py <a.safetensors> <b.safetensors> --rtol R
                              [--atol A] [--with-amp-state] [--exact]
"""

import json
import math
import struct
import sys

FORMATS = {"F32": ("f", 4), "F64": ("d", 8), "I64": ("q", 8), "I32": ("i", 4)}


def read(path):
    data = open(path, "rb").read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    body = data[8 + size:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        code, width = FORMATS[info["dtype"]]
        begin, end = info["data_offsets"]
        count = (end - begin) // width
        tensors[name] = struct.unpack("<%d%s" % (count, code), body[begin:end])
    return tensors, header.get("__metadata__", {})


def main():
    a_path, b_path = sys.argv[1:3]
    args = sys.argv[3:]
    rtol = float(args[args.index("--rtol") + 1]) if "--rtol" in args else 0.0
    atol = float(args[args.index("--atol") + 1]) if "--atol" in args else 0.0
    a, _ = read(a_path)
    b, _ = read(b_path)
    keep = lambda n: "--with-amp-state" in args or not n.startswith("amp.")
    names = sorted(n for n in a if keep(n))
    if names != sorted(n for n in b if keep(n)):
        print("FAIL: the checkpoints hold different tensors")
        return 1
    worst, worst_name = 0.0, ""
    for name in names:
        x, y = a[name], b[name]
        if len(x) != len(y):
            print("FAIL: %s has %d elements in one file, %d in the other" %
                  (name, len(x), len(y)))
            return 1
        scale = max(max((abs(v) for v in y), default=0.0), 1e-30)
        diff = max((abs(p - q) for p, q in zip(x, y)), default=0.0)
        if any(math.isnan(v) for v in x + y):
            print("FAIL: %s holds NaN" % name)
            return 1
        relative = max(diff - atol, 0.0) / scale
        if relative > worst:
            worst, worst_name = relative, name
    status = "OK" if worst <= rtol else "FAIL"
    print("%s: %d tensors, largest relative difference %.3g (%s), "
          "tolerance %.3g" % (status, len(names), worst, worst_name or "-",
                              rtol))
    return 0 if status == "OK" else 1


if __name__ == "__main__":
    sys.exit(main())
