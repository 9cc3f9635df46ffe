"""Builds examples/aot/train_mlp.cpp the way a user of the unpacked
distribution would: the step compiled by the distribution's mp-compile,
the program compiled and linked with the flags of its pkg-config files
(mp-runtime, and mp-runtime-cuda where the distribution has the CUDA
backend; that one is only linked, since there is no GPU to run it on
here). Prints the flags, where each shared library of the program resolves
from, and the program's output.

usage: build-aot.py <distribution prefix> <source root> <workdir> <c++>
"""

import os
import re
import subprocess
import sys


def run(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode:
        sys.exit("FAIL: %s exited %d:\n%s%s" % (" ".join(cmd), out.returncode,
                                               out.stdout[-3000:],
                                               out.stderr[-3000:]))
    return out.stdout


def main():
    prefix, source, work, cxx = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    run([os.path.join(prefix, "bin", "mp-compile"),
         os.path.join(source, "examples", "mlp.mlir"), "--optimizer=sgd",
         "--lr=0.1", "--amp=f16", "-o", os.path.join(work, "mlp.o"),
         "--header", os.path.join(work, "mlp.h")])
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(prefix, "lib",
                                                        "pkgconfig"))
    packages = ["mp-runtime"]
    if os.path.exists(os.path.join(prefix, "lib", "pkgconfig",
                                   "mp-runtime-cuda.pc")):
        packages.append("mp-runtime-cuda")
    for package in packages:
        flags = run(["pkg-config", "--cflags", "--libs", package],
                    env=env).split()
        # The flags name the prefix through pcfiledir: show them relative.
        shown = [f.replace(os.path.join(prefix, "lib", "pkgconfig/../.."),
                           "<prefix>") for f in flags]
        print("%s: %s" % (package, " ".join(shown)))
        program = os.path.join(work, "train-mlp-" + package)
        run([cxx, "-std=c++17", "-O2", "-I" + work,
             os.path.join(source, "examples", "aot", "train_mlp.cpp"),
             os.path.join(work, "mlp.o"), "-o", program] + flags)
        if package != "mp-runtime":
            print("%s: linked" % package)
            continue
        # Every library the distribution carries is taken from it.
        real = os.path.realpath(prefix)
        for line in run(["ldd", program]).splitlines():
            m = re.match(r"\s*(\S+) => (\S+)", line)
            if m and os.path.realpath(m.group(2)).startswith(real + "/"):
                print("from the distribution: " + m.group(1))
        symbols = run(["nm", "-C", program])
        print("mlir symbols: %d" % symbols.count("mlir::"))
        sys.stdout.write(run([program]))


if __name__ == "__main__":
    main()
