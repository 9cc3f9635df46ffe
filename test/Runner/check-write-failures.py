#!/usr/bin/env python3
"""Every file the tools write survives a failing write.

usage: check-write-failures.py BIN_DIR STEP WORKDIR

For each file a tool writes (mp-runner's checkpoint, log in both formats,
summary and plot; mp-opt's output and AMP report and picture; mp-compile's
object and header), the tool is run twice: once normally, which must write
the file, then so that writing it fails. The second run must exit 1 with an
error naming the file, print no crash report, leave the first file byte for
byte as it was, and leave no temporary file behind.

Two ways of failing, each over every file:
  * the file-size limit (RLIMIT_FSIZE, `ulimit -f`) set below the file's
    size: writes fail with EFBIG;
  * a full disk: a small tmpfs mounted in WORKDIR and filled up (ENOSPC).
    Where mounting is not permitted this part says so and is skipped.
Prints a line per file and way; exits 1 on any failure.
"""

import hashlib
import os
import resource
import subprocess
import sys

LIMIT = 2048  # bytes: below every file written here


def limited():
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def cases(bindir, step, work):
    """(what, command, the file it writes), writing into `work`."""
    os.makedirs(work, exist_ok=True)
    runner = os.path.join(bindir, "mp-runner")
    opt = os.path.join(bindir, "mp-opt")
    compiler = os.path.join(bindir, "mp-compile")
    out = lambda name: os.path.join(work, name)
    train = [runner, step, "--steps", "40", "--no-progress", "--amp=f16",
             "--backend=cpu"]
    return [
        ("checkpoint", train + ["--checkpoint", out("c.safetensors")],
         out("c.safetensors")),
        ("log (jsonl)", train + ["--log", out("l.jsonl")], out("l.jsonl")),
        ("log (csv)", train + ["--log", out("l.csv")], out("l.csv")),
        ("summary", train + ["--summary", out("s.json")], out("s.json")),
        ("plot", train + ["--compare", "--plot", out("p.svg")], out("p.svg")),
        ("mp-opt output", [opt, step, "-o", out("o.mlir")], out("o.mlir")),
        ("AMP report", [opt, step, "--tg-auto-mixed-precision=report=" +
                        out("r.json"), "-o", os.devnull], out("r.json")),
        ("AMP picture", [opt, step, "--tg-auto-mixed-precision=report-dot=" +
                         out("r.dot"), "-o", os.devnull], out("r.dot")),
        ("mp-compile object", [compiler, step, "-o", out("s.o"), "--header",
                               out("s.h")], out("s.o")),
        ("mp-compile header", [compiler, step, "-o", os.devnull, "--header",
                               out("s2.h")], out("s2.h")),
    ]


def fill(directory):
    """Leaves less than a kilobyte free on the file system of `directory`."""
    filler = os.path.join(directory, "filler")
    with open(filler, "wb") as f:
        while True:
            st = os.statvfs(directory)
            free = st.f_bavail * st.f_frsize
            if free < 1024:
                break
            try:
                f.write(b"\0" * max(512, free - 512))
                f.flush()
            except OSError:
                break
    return filler


def run_cases(label, bindir, step, work, prepare, cleanup):
    ok = True
    for what, cmd, path in cases(bindir, step, work):
        first = subprocess.run(cmd, capture_output=True, text=True)
        if first.returncode != 0 or not os.path.exists(path):
            print(f"{what}: FAIL: the unlimited run failed: {first.stderr}")
            ok = False
            continue
        if os.path.getsize(path) <= LIMIT:
            print(f"{what}: FAIL: {os.path.getsize(path)} bytes is within the "
                  f"limit; the test proves nothing")
            ok = False
            continue
        before = digest(path)
        limit = prepare()
        r = subprocess.run(cmd, capture_output=True, text=True,
                           preexec_fn=limit)
        cleanup()
        name = os.path.basename(path)
        problems = []
        if r.returncode != 1:
            problems.append(f"exit {r.returncode}")
        if "Stack dump" in r.stderr or "LLVM ERROR" in r.stderr:
            problems.append("crash report")
        error = next((l for l in r.stderr.splitlines() if "error" in l), "")
        if name not in error:
            problems.append(f"the error does not name {name}: {error!r}")
        if digest(path) != before:
            problems.append("the previous file changed")
        leftovers = [f for f in os.listdir(work) if ".tmp-" in f]
        if leftovers:
            problems.append(f"temporary files left: {leftovers}")
        if problems:
            ok = False
            print(f"{label}: {what}: FAIL: {'; '.join(problems)}")
        else:
            print(f"{label}: {what}: ok: {error.strip()}")
    return ok


def main():
    bindir, step, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    ok = run_cases("file-size limit", bindir, step,
                   os.path.join(work, "limit"), lambda: limited,
                   lambda: None)
    disk = os.path.join(work, "tmpfs")
    os.makedirs(disk, exist_ok=True)
    # A run killed before its `finally` leaves the tmpfs mounted, which
    # makes the next `rm -rf` of the build tree fail: take it down first.
    while os.path.ismount(disk):
        if subprocess.run(["umount", disk]).returncode != 0:
            break
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k",
                              "tmpfs", disk], capture_output=True, text=True)
    if mounted.returncode != 0:
        print("full disk: skipped: cannot mount a tmpfs here "
              f"({mounted.stderr.strip() or 'not permitted'})")
    else:
        try:
            filler = []
            ok &= run_cases("full disk", bindir, step, disk,
                            lambda: filler.append(fill(disk)) or None,
                            lambda: os.unlink(filler.pop()))
        finally:
            subprocess.run(["umount", disk])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
