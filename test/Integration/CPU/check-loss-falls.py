"""Checks that a run's final loss is below a fraction of its first loss.

usage: check-loss-falls.py <summary.json> <fraction>
"""

import json
import sys

with open(sys.argv[1]) as f:
    run = json.load(f)["runs"][0]
first, last = run["losses"][0], run["losses"][-1]
print("loss %.4f -> %.4f" % (first, last))
if last is None or not last < float(sys.argv[2]) * first:
    sys.exit("FAIL: the loss did not fall below %s of its start" % sys.argv[2])
