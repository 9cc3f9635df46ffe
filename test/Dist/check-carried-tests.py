"""Checks the distribution's copy of the CUDA integration tests, which
mp-gpu-check's integration stage runs with the lit and FileCheck the
distribution carries: every file a test names through %S or %mp_src_root
is in the distribution, every program a RUN line starts is in its bin/ or
libexec/mp/ (or is a shell utility), and the carried lit discovers the
tests with the carried configuration. Without a GPU every test is then
reported UNSUPPORTED.

usage: check-carried-tests.py <distribution prefix> <workdir>
"""

import os
import re
import shutil
import subprocess
import sys

SHELL_UTILITIES = {"rm", "mkdir", "cmp", "diff", "cat", "not", "env"}


def main():
    prefix, work = sys.argv[1:3]
    share = os.path.join(prefix, "share", "mp")
    tests = os.path.join(share, "test", "Integration", "CUDA")
    programs = set(os.listdir(os.path.join(prefix, "bin")))
    programs |= set(os.listdir(os.path.join(prefix, "libexec", "mp")))
    names, files = 0, set()
    for name in sorted(os.listdir(tests)):
        if not name.endswith(".test"):
            continue
        names += 1
        for line in open(os.path.join(tests, name)):
            if not line.startswith("RUN:"):
                continue
            for ref in re.findall(r"(%S|%mp_src_root)(/[^\s|<>]+)", line):
                base = tests if ref[0] == "%S" else share
                path = os.path.normpath(base + ref[1])
                if not os.path.exists(path):
                    sys.exit("FAIL: %s names %s%s, which the distribution "
                             "does not carry" % (name, ref[0], ref[1]))
                files.add(path)
            for command in re.split(r"\||&&", line[4:]):
                words = command.split()
                if not words or words[0].startswith("%"):
                    continue
                if words[0] not in programs | SHELL_UTILITIES:
                    sys.exit("FAIL: %s runs %s, which the distribution does "
                             "not carry" % (name, words[0]))
    print("%d tests; the %d files they name are carried" % (names,
                                                           len(files)))
    shutil.rmtree(work, ignore_errors=True)
    launcher = ("import sys; sys.path.insert(0, %r); "
                "sys.argv[0] = 'lit'; from lit.main import main; main()"
                % os.path.join(share, "lit"))
    out = subprocess.run([sys.executable, "-c", launcher, "-v",
                          "--show-unsupported", "--param",
                          "exec_root=" + work, tests],
                         capture_output=True, text=True)
    print("carried lit: exit %d" % out.returncode)
    for line in (out.stdout + out.stderr).splitlines():
        if re.match(r"\s*(Total Discovered Tests|Unsupported|Passed|Failed)"
                    r"\s*:", line) or "note:" in line or "error" in line:
            print(line.strip())


if __name__ == "__main__":
    main()
