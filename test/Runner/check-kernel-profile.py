"""Checks a kernel profile written under MP_PROFILE_SHAPES=1: every entry's
calls and seconds are the sums over its signatures. Prints that, then each
signature with its calls."""
import json
import sys

profile = json.load(open(sys.argv[1]))
entries, shapes = profile["entries"], profile["shapes"]
sums = {}
for signature, total in shapes.items():
    entry = signature.split(" ", 1)[0]
    calls, seconds = sums.get(entry, (0, 0.0))
    sums[entry] = (calls + total["calls"], seconds + total["seconds"])
agree = sums.keys() == entries.keys() and all(
    sums[e][0] == entries[e]["calls"]
    and abs(sums[e][1] - entries[e]["seconds"]) <= 1e-6 * len(shapes)
    for e in entries)
print("entries and shapes agree" if agree else "entries and shapes differ")
for signature, total in sorted(shapes.items()):
    print("%s: %d calls" % (signature, total["calls"]))
