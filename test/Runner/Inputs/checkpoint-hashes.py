"""Prints one line per tensor of a safetensors checkpoint: its name, dtype,
shape and the SHA-256 of its bytes, sorted by name, so that two
checkpoints can be compared bit for bit with `diff`.

usage: checkpoint-hashes.py <checkpoint.safetensors>
"""

import hashlib
import json
import struct
import sys


def main():
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    base = 8 + size
    for name in sorted(header):
        if name == "__metadata__":
            continue
        info = header[name]
        begin, end = info["data_offsets"]
        digest = hashlib.sha256(data[base + begin:base + end]).hexdigest()
        print(name, info["dtype"], info["shape"], digest[:16])


if __name__ == "__main__":
    main()
