"""Writes token data for the transformer models as .npy files (no numpy).

usage: write-tokens.py <dir> <rows> <length> <vocab> <classes|lm> [--seed S]
                       [--right] [--empty-first-row]

<dir>/ids.npy (int64 [rows, length], uniform token ids), <dir>/mask.npy
(int64, 1 for a token and 0 for padding: every other row is padded on the
left, the rest on the right, each by 0 to length-2 positions, so that some
query rows see nothing but padding; with --right, every row on the right) and <dir>/labels.npy (int32: [rows],
the first token modulo 3, for `classes`; [rows, length], the previous
token, for `lm`, and -100 on padding: ignored, as Hugging Face labels it).
With --empty-first-row, the first row of the mask is all padding, a row no
query can attend to.
"""

import random
import struct
import sys


def write(path, code, shape, values):
    descr = {"q": "<i8", "i": "<i4"}[code]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ", ".join(str(d) for d in shape) + ("," if len(shape) == 1
                                                   else ""))
    while (10 + len(header) + 1) % 64:
        header += " "
    header += "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) +
                header.encode())
        f.write(struct.pack("<%d%s" % (len(values), code), *values))


def main():
    args = sys.argv[1:]
    right = "--right" in args
    if right:
        args.remove("--right")
    empty_first = "--empty-first-row" in args
    if empty_first:
        args.remove("--empty-first-row")
    out, rows, length, vocab, kind = args[:5]
    rows, length, vocab = int(rows), int(length), int(vocab)
    seed = int(args[6]) if len(args) > 6 else 0
    rng = random.Random(seed)
    ids, mask, labels = [], [], []
    for r in range(rows):
        row = [rng.randrange(vocab) for _ in range(length)]
        pad = rng.randrange(length - 1)
        keep = [0] * pad + [1] * (length - pad)
        if r % 2 or right:
            keep.reverse()
        if r == 0 and empty_first:
            keep = [0] * length
        ids += row
        mask += keep
        if kind == "classes":
            labels.append(row[0] % 3)
        else:
            labels += [t if k else -100
                       for t, k in zip([row[-1]] + row[:-1], keep)]
    write(out + "/ids.npy", "q", [rows, length], ids)
    write(out + "/mask.npy", "q", [rows, length], mask)
    write(out + "/labels.npy", "i",
          [rows] if kind == "classes" else [rows, length], labels)


if __name__ == "__main__":
    main()
