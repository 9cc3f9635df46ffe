"""Helpers shared by the execution-test scripts: .npy writing and f32
rounding, without NumPy (CI machines need not have it)."""

import struct


def f32(v):
    """`v` rounded to the nearest float32."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


def write_npy(path, shape, values):
    """Writes float32 `values` (row-major) as a .npy file of `shape`."""
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % dims
    while (10 + len(header) + 1) % 64:
        header += " "
    header += "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode())
        f.write(struct.pack("<%df" % len(values), *values))
