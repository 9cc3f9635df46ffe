"""Writes a .npy file of small deterministic values.

usage: write-npy.py <path> <descr, e.g. '<f4'> <comma-separated shape>
                    [<index>=<value> ...]

Element i is i % 10 for integers, ((i % 17) - 8) / 8 for floats, except
where an <index>=<value> pair sets it.
"""

import struct
import sys

path, descr, dims = sys.argv[1], sys.argv[2], sys.argv[3]
shape = [int(d) for d in dims.split(",")]
count = 1
for d in shape:
    count *= d
header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
    descr, ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
while (10 + len(header) + 1) % 64:
    header += " "
header += "\n"
code = {"<f4": "f", "<i4": "i", "<i8": "q", "<f8": "d"}[descr]
values = [(i % 10) if code in "iq" else ((i % 17) - 8) / 8.0 for i in range(count)]
for pair in sys.argv[4:]:
    index, value = pair.split("=")
    values[int(index)] = (int if code in "iq" else float)(value)
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<%d%s" % (count, code), *values))
