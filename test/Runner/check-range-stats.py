"""Prints one line per op result of a --range-stats file:
name, op, forward/gradient, storage type, whether amax is finite, whether
it is below the f16 maximum, and the steps with a non-finite value."""

import json
import sys

stats = json.load(open(sys.argv[1]))
print("steps", stats["steps"], "amp", stats["amp"])
for op in stats["ops"]:
    for r in op["results"]:
        amax = r["amax"]
        print(op["name"], op["op"], "gradient" if op["gradient"] else "forward",
              r["type"], "finite-amax", amax is not None,
              "below-f16-max", amax is not None and amax < stats["f16_max"],
              "nonfinite", r["nonfinite_steps"])
