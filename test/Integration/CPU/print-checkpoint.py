"""Prints the integer tensors of a safetensors checkpoint, one per line, as
`name = v0 v1 ...` (the step counters and seeds the runner keeps); with
--hashes, every tensor as `name dtype shape sha256-prefix`, so that two
checkpoints can be compared bit for bit with `diff`.

usage: print-checkpoint.py [--hashes] <checkpoint.safetensors>
"""

import hashlib
import json
import struct
import sys

FORMATS = {"I32": "<i", "I64": "<q"}


def main():
    hashes = sys.argv[1] == "--hashes"
    with open(sys.argv[-1], "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    base = 8 + size
    for name in sorted(header):
        info = header[name]
        if name == "__metadata__":
            continue
        if hashes:
            begin, end = info["data_offsets"]
            digest = hashlib.sha256(data[base + begin:base + end]).hexdigest()
            print(name, info["dtype"], info["shape"], digest[:16])
            continue
        if info["dtype"] not in FORMATS:
            continue
        fmt = FORMATS[info["dtype"]]
        width = struct.calcsize(fmt)
        begin, end = info["data_offsets"]
        values = [struct.unpack_from(fmt, data, base + k)[0]
                  for k in range(begin, end, width)]
        print(name, "=", " ".join(str(v) for v in values))


if __name__ == "__main__":
    main()
