#!/usr/bin/env python3
"""Runs a tool on every malformed input and checks that it fails cleanly.

usage: check-corpus.py TOOL INPUTS_DIR SCRATCH_DIR [EXTRA_INPUT...]

TOOL may carry arguments after the input, separated by commas
(`mp-runner,--steps,1`); the default is `-o /dev/null`.

Besides the committed corpus in INPUTS_DIR, generates inputs too large to keep
in the repository (deep nesting) into SCRATCH_DIR. Every input must make TOOL
exit with status 1 (not 0, not a signal) within the time limit and memory cap,
print an `error:` line that carries a location (`file:line:col:` or
`loc(...)`), and print no crash report. One summary line per input goes to
stdout for FileCheck; the exit status is non-zero if any input misbehaved.
The deeply nested bytecode input is written by MLIR_OPT (Debian's stock
mlir-opt, with its stack limit raised so that it can parse the text) when
the environment variable MLIR_OPT names it; without it the input is skipped.
"""

import os
import re
import resource
import subprocess
import sys

TIME_LIMIT_S = 60
MEMORY_LIMIT = 4 << 30  # bytes of address space
LOCATED = re.compile(r"(^\S+:\d+:\d+: error: |^error: .*loc\(|^\S+: error: )",
                     re.M)
CRASH = re.compile(r"Stack dump|PLEASE submit a bug report|Assertion .* failed")


def raise_stack_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    resource.setrlimit(resource.RLIMIT_STACK, (hard, hard))


def generate(scratch):
    os.makedirs(scratch, exist_ok=True)
    # The affine parser recurses once per operator: a long sum or a chain of
    # negations in an otherwise flat file.
    n = 200000
    with open(os.path.join(scratch, "long-affine-sum.mlir"), "w") as f:
        f.write("#map = affine_map<(d0) -> (" + " + ".join(["d0"] * n) +
                ")>\nfunc.func @f() attributes {m = #map} {\n  return\n}\n")
    with open(os.path.join(scratch, "long-affine-negation.mlir"), "w") as f:
        f.write("func.func @f() attributes {m = affine_map<(d0) -> (" +
                "- " * n + "d0)>} {\n  return\n}\n")
    # Bytecode nesting attributes 20000 levels deep: read iteratively by
    # MLIR, but printed (and written) recursively.
    mlir_opt = os.environ.get("MLIR_OPT")
    if mlir_opt:
        n = 20000
        text = os.path.join(scratch, "deep-attributes.txt")
        with open(text, "w") as f:
            f.write("func.func @f() attributes {a = " + "[" * n + "1" +
                    "]" * n + "} {\n  return\n}\n")
        subprocess.run([mlir_opt, text, "--emit-bytecode", "-o",
                        os.path.join(scratch, "deep-attributes.mlirbc")],
                       check=True, preexec_fn=raise_stack_limit)
        os.unlink(text)
    n = 100000
    with open(os.path.join(scratch, "deep-nesting.mlir"), "w") as f:
        f.write("func.func @f() {\n  %0 = tg.constant dense<" + "[" * n +
                "1.0" + "]" * n + "> : tensor<1xf32>\n  return\n}\n")
    n = 20000
    with open(os.path.join(scratch, "deep-regions.mlir"), "w") as f:
        f.write("func.func @f() {\n" + '"test.op"() ({\n' * n +
                "}) : () -> ()\n" * n + "return\n}\n")


# Under AddressSanitizer (utils/mp test --sanitize) a tool cannot start
# with its address space capped, as ASan reserves terabytes of shadow
# memory; ASan's allocator enforces the cap instead, failing an allocation
# above it as the capped system would.
SANITIZED = "ASAN_OPTIONS" in os.environ
TOOL_ENV = dict(os.environ)
if SANITIZED:
    TOOL_ENV["ASAN_OPTIONS"] += (":allocator_may_return_null=1:"
                                 f"max_allocation_size_mb={MEMORY_LIMIT >> 20}")


def limit():
    if not SANITIZED:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def check(tool, path):
    name = os.path.basename(path)
    try:
        program, *args = tool.split(",")
        args = args or ["-o", os.devnull]
        r = subprocess.run([program, path] + args, capture_output=True,
                           text=True, errors="replace", timeout=TIME_LIMIT_S,
                           preexec_fn=limit, env=TOOL_ENV)
    except subprocess.TimeoutExpired:
        return False, f"{name}: HANG (over {TIME_LIMIT_S} s)"
    first = next((l for l in r.stderr.splitlines() if "error:" in l), "")
    first = first.replace(path, name)
    if r.returncode < 0 or CRASH.search(r.stderr):
        return False, f"{name}: CRASH (status {r.returncode})"
    if r.returncode != 1:
        return False, f"{name}: WRONG STATUS {r.returncode}: {first}"
    if not LOCATED.search(r.stderr):
        return False, f"{name}: NO LOCATED ERROR: {r.stderr[:200]!r}"
    return True, f"{name}: rejected: {first}"


def main():
    tool, inputs, scratch = sys.argv[1:4]
    generate(scratch)
    paths = [os.path.join(inputs, p) for p in sorted(os.listdir(inputs))]
    paths += [os.path.join(scratch, p) for p in sorted(os.listdir(scratch))]
    paths += sys.argv[4:]
    ok = True
    for path in paths:
        good, line = check(tool, path)
        ok &= good
        print(line)
    print(f"{len(paths)} inputs checked")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
