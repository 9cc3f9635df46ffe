"""Checks mp-gpu-check's OUTDIR: summary.json parses, has the expected
result and stage statuses, every stage has its fields, every stage that ran
left a log, summary.md exists and no temporary file is left behind.

usage: check-gpu-summary.py <outdir> <result> [stage=status ...]
"""

import json
import os
import sys

outdir, result = sys.argv[1:3]
with open(os.path.join(outdir, "summary.json")) as f:
    summary = json.load(f)
if summary["result"] != result:
    sys.exit("FAIL: result %r, expected %r" % (summary["result"], result))
stages = {s["name"]: s for s in summary["stages"]}
for item in sys.argv[3:]:
    name, status = item.split("=")
    if stages[name]["status"] != status:
        sys.exit("FAIL: %s is %s, expected %s (%s)" % (
            name, stages[name]["status"], status, stages[name]["reason"]))
for s in summary["stages"]:
    for field in ("status", "seconds", "limit", "reason", "details", "notes"):
        if field not in s:
            sys.exit("FAIL: stage %s has no %s" % (s["name"], field))
    if s["status"] != "skipped" and not os.path.exists(s["log"]):
        sys.exit("FAIL: stage %s has no log" % s["name"])
    if s["status"] == "skipped" and not s["reason"]:
        sys.exit("FAIL: stage %s is skipped without a reason" % s["name"])
if not os.path.exists(os.path.join(outdir, "summary.md")):
    sys.exit("FAIL: no summary.md")
left = [n for n in os.listdir(outdir) if n.startswith(".")]
if left:
    sys.exit("FAIL: left behind: %s" % ", ".join(left))
print("summary: %s, %d stages" % (summary["result"], len(stages)))
