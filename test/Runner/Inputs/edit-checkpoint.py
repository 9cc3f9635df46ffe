"""Writes a copy of a safetensors checkpoint with one thing changed: the
step in its metadata (--step N), or the first element of a float tensor
set to NaN (--nan NAME).

usage: edit-checkpoint.py <in.safetensors> <out.safetensors>
                          [--step N] [--nan NAME]
"""

import json
import struct
import sys


def main():
    src, dst = sys.argv[1:3]
    args = sys.argv[3:]
    data = open(src, "rb").read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    body = bytearray(data[8 + size:])
    if "--step" in args:
        header["__metadata__"]["step"] = args[args.index("--step") + 1]
    if "--nan" in args:
        info = header[args[args.index("--nan") + 1]]
        assert info["dtype"] == "F32"
        begin = info["data_offsets"][0]
        body[begin:begin + 4] = struct.pack("<f", float("nan"))
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(body))


if __name__ == "__main__":
    main()
