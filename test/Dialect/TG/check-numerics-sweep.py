"""tg-check-numerics on every op of a step, one at a time, and on each
scope: the output always verifies (mp-opt verifies it and exits non-zero
otherwise), selects exactly the op asked for, and lowers to LLVM.

usage: check-numerics-sweep.py <mp-opt> <step.mlir> <compute-type>
"""

import re
import subprocess
import sys
import tempfile


def opt(mp_opt, path, *passes):
    out = subprocess.run([mp_opt, path, *passes], capture_output=True,
                         text=True)
    if out.returncode:
        sys.exit("FAIL: %s %s\n%s" % (path, " ".join(passes), out.stderr))
    return out.stdout


def main():
    mp_opt, step, compute = sys.argv[1:4]
    with tempfile.NamedTemporaryFile("w", suffix=".mlir") as amp:
        amp.write(opt(mp_opt, step,
                      "--tg-mixed-precision=compute-type=" + compute))
        amp.flush()
        everything = opt(mp_opt, amp.name, "--tg-check-numerics")
        names = sorted(set(re.findall(r'name = "([^"]*)"', everything)))
        for scope in ["all", "forward", "backward"]:
            opt(mp_opt, amp.name, "--tg-check-numerics=scope=" + scope,
                "--tg-lower-to-llvm")
        for name in names:
            if any(c in name for c in "*?[{\\"):
                continue
            out = opt(mp_opt, amp.name, "--tg-check-numerics=ops=" + name)
            picked = set(re.findall(r'name = "([^"]*)"', out))
            if picked != {name}:
                sys.exit("FAIL: ops=%s selected %s" % (name, sorted(picked)))
        print("%s %s: %d ops, each alone and every scope: PASS"
              % (step.split("/")[-1], compute, len(names)))


if __name__ == "__main__":
    main()
