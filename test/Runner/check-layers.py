"""Checks that each header of the runner library's API (include/mp/Runner)
includes only the layers below it, in the order mp/Runner/Runner.h gives,
and that the library's sources (lib/Runner) include no tool's code
(lib/Tools, mp/Tools/mp-*).

usage: check-layers.py <source root>
"""

import os
import re
import sys

# From the bottom; a header may include those before it on its line or
# earlier lines (the same line: neither includes the other).
LAYERS = [
    ["HostTensor", "Progress", "Ranks", "StepSignature"],
    ["Dataset", "CompiledStep", "Loading", "Weights"],
    ["Executor"],
    ["Trainer"],
    ["Numerics"],
    ["Runner"],
]


def main():
    root = sys.argv[1]
    headers = os.path.join(root, "include", "mp", "Runner")
    level = {h: k for k, row in enumerate(LAYERS) for h in row}
    found = sorted(f[:-2] for f in os.listdir(headers) if f.endswith(".h"))
    unknown = [h for h in found if h not in level]
    if unknown:
        sys.exit("FAIL: headers not placed in a layer: %s" % ", ".join(unknown))
    for h in found:
        text = open(os.path.join(headers, h + ".h")).read()
        for inc in re.findall(r'#include "mp/Runner/(\w+)\.h"', text):
            if level[inc] >= level[h]:
                sys.exit("FAIL: mp/Runner/%s.h includes %s.h, which is not "
                         "below it" % (h, inc))
    sources = os.path.join(root, "lib", "Runner")
    for name in sorted(os.listdir(sources)):
        if name.endswith((".cpp", ".h")):
            text = open(os.path.join(sources, name)).read()
            if re.search(r'#include "mp/Tools/(mp-|\w+Flags)', text):
                sys.exit("FAIL: lib/Runner/%s includes a tool's code" % name)
    print("%d headers in %d layers; lib/Runner includes no tool" %
          (len(found), len(LAYERS)))


if __name__ == "__main__":
    main()
