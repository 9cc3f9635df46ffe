#!/usr/bin/env python3
"""Malformed data, checkpoints and policies given to mp-runner fail cleanly.

usage: check-runner-inputs.py BIN_DIR STEP SCRATCH_DIR

Writes a corpus of broken .npy arrays (--data), safetensors checkpoints
(--resume) and policy files (--amp-options=policy=...) for STEP (the MLP
example: input x f32[32, 64], labels i32[32]) into SCRATCH_DIR, and runs
mp-runner on each. Every run must exit 1 within the time limit and memory
cap, print an `error:` line naming the file, and print no crash report. One
line per input goes to stdout for FileCheck; exits 1 if any misbehaved.
"""

import json
import os
import resource
import struct
import subprocess
import sys

TIME_LIMIT_S = 60
MEMORY_LIMIT = 4 << 30
CRASH = ("Stack dump", "PLEASE submit a bug report", "LLVM ERROR",
         "Assertion", "runtime error:")


def npy(descr, shape, data=b"", fortran=False, version=1, header=None):
    if header is None:
        header = ("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" %
                  (descr, "True" if fortran else "False", shape))
    header = header.encode() + b" " * ((64 - (len(header) + 11) % 64) % 64)
    header += b"\n"
    if version == 1:
        size = struct.pack("<H", len(header))
    else:
        size = struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header + data


def safetensors(header, data=b"", length=None):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    n = len(text) if length is None else length
    return struct.pack("<Q", n) + text + data


def corpus():
    good_x = npy("<f4", "(64, 64)", b"\0" * 64 * 64 * 4)
    good_y = npy("<i4", "(64,)", b"\0" * 64 * 4)
    deep = 200000
    return {
        # .npy inputs (given as x, with valid labels).
        "npy-truncated-header.npy": ("data", b"\x93NUMPY\x01\x00"),
        "npy-header-past-end.npy": ("data", b"\x93NUMPY\x01\x00\xff\xff{'d"),
        "npy-overflowing-shape.npy": (
            "data", npy("<f4", "(4611686018427387904, 4611686018427387904, 16)",
                        b"\0" * 64)),
        "npy-huge-dimension.npy": ("data", npy("<f4", "(1099511627776, 64)")),
        "npy-negative-dimension.npy": ("data", npy("<f4", "(-64, 64)")),
        "npy-bad-dimension.npy": ("data", npy("<f4", "(64, x)")),
        "npy-complex-dtype.npy": ("data", npy("<c8", "(64, 64)")),
        "npy-big-endian.npy": ("data", npy(">f4", "(64, 64)")),
        "npy-fortran-order.npy": ("data", npy("<f4", "(64, 64)",
                                              b"\0" * 64 * 64 * 4, True)),
        "npy-short-data.npy": ("data", npy("<f4", "(64, 64)", b"\0" * 100)),
        "npy-no-shape.npy": ("data", npy("", "", header="{'descr': '<f4'}")),
        "npy-version-9.npy": ("data", npy("<f4", "(64, 64)", version=9)),
        "npy-garbage.npy": ("data", b"\x00\x01garbage" * 10),
        "npy-empty.npy": ("data", b""),
        # safetensors checkpoints (given to --resume).
        "ckpt-empty.safetensors": ("resume", b""),
        "ckpt-short.safetensors": ("resume", b"\x01\x02"),
        "ckpt-header-past-end.safetensors": (
            "resume", safetensors({}, length=1 << 62)),
        "ckpt-not-json.safetensors": ("resume", safetensors(b"{not json")),
        "ckpt-not-object.safetensors": ("resume", safetensors([1, 2])),
        "ckpt-deep-json.safetensors": (
            "resume", safetensors(b"[" * deep + b"]" * deep)),
        "ckpt-bad-dtype.safetensors": ("resume", safetensors(
            {"fc1.weight": {"dtype": "C64", "shape": [1],
                            "data_offsets": [0, 8]}}, b"\0" * 8)),
        "ckpt-overflowing-shape.safetensors": ("resume", safetensors(
            {"fc1.weight": {"dtype": "F32",
                            "shape": [1 << 40, 1 << 40, 1 << 40],
                            "data_offsets": [0, 16]}}, b"\0" * 16)),
        "ckpt-offsets-outside.safetensors": ("resume", safetensors(
            {"fc1.weight": {"dtype": "F32", "shape": [4],
                            "data_offsets": [0, 1 << 40]}}, b"\0" * 16)),
        "ckpt-negative-offset.safetensors": ("resume", safetensors(
            {"fc1.weight": {"dtype": "F32", "shape": [4],
                            "data_offsets": [-16, 0]}}, b"\0" * 16)),
        "ckpt-missing-tensor.safetensors": ("resume", safetensors(
            {"__metadata__": {"entry": "mlp", "step": "3",
                              "amp": "off"}})),
        "ckpt-wrong-shape.safetensors": ("resume", safetensors(
            {"__metadata__": {"entry": "mlp", "step": "3", "amp": "off"},
             "fc1.weight": {"dtype": "F32", "shape": [2, 2],
                            "data_offsets": [0, 16]}}, b"\0" * 16)),
        "ckpt-bad-step.safetensors": ("resume", safetensors(
            {"__metadata__": {"entry": "mlp", "step": "-1",
                              "amp": "off"}})),
        # Policy files.
        "policy-not-json.json": ("policy", b"{\"overrides\": ["),
        "policy-not-object.json": ("policy", b"[]"),
        "policy-deep.json": ("policy", b"[" * deep + b"]" * deep),
        "policy-deep-object.json": (
            "policy", b"{\"add\": " + b"{\"a\": " * deep + b"1" + b"}" * deep
            + b"}"),
        "policy-unknown-key.json": ("policy", b"{\"lists\": {}}"),
        "policy-bad-glob.json": (
            "policy", b"{\"overrides\": [{\"pattern\": \"fc[\", "
                      b"\"precision\": \"f32\"}]}"),
        "policy-unknown-op.json": ("policy", b"{\"add\": {\"deny\": "
                                             b"[\"tg.conv9d\"]}}"),
        "policy-bad-precision.json": (
            "policy", b"{\"overrides\": [{\"name\": \"fc1.matmul\", "
                      b"\"precision\": \"f8\"}]}"),
        "policy-binary.json": ("policy", bytes(range(256))),
    }, good_x, good_y


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


def main():
    bindir, step, scratch = sys.argv[1:4]
    os.makedirs(scratch, exist_ok=True)
    runner = os.path.join(bindir, "mp-runner")
    inputs, good_x, good_y = corpus()
    x, y = os.path.join(scratch, "good-x.npy"), os.path.join(scratch,
                                                             "good-y.npy")
    open(x, "wb").write(good_x)
    open(y, "wb").write(good_y)
    ok = True
    for name, (kind, content) in sorted(inputs.items()):
        path = os.path.join(scratch, name)
        with open(path, "wb") as f:
            f.write(content)
        cmd = [runner, step, "--steps", "3", "--no-progress",
               "--backend=cpu"]
        if kind == "data":
            cmd += ["--data", f"x={path}", "--data", f"labels={y}"]
        elif kind == "resume":
            cmd += ["--resume", path]
        else:
            cmd += ["--amp=f16", f"--amp-options=policy={path}"]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True,
                               errors="replace", timeout=TIME_LIMIT_S,
                               preexec_fn=limit, env=TOOL_ENV)
        except subprocess.TimeoutExpired:
            ok = False
            print(f"{name}: HANG")
            continue
        error = next((l for l in r.stderr.splitlines() if "error:" in l), "")
        error = error.replace(path, name).replace(scratch + "/", "")
        if r.returncode < 0 or any(c in r.stderr for c in CRASH):
            ok = False
            print(f"{name}: CRASH (status {r.returncode})")
        elif r.returncode != 1:
            ok = False
            print(f"{name}: WRONG STATUS {r.returncode}: {error}")
        elif name not in error:
            ok = False
            print(f"{name}: ERROR DOES NOT NAME THE FILE: {error}")
        else:
            print(f"{name}: rejected: {error}")
    print(f"{len(inputs)} inputs checked")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
