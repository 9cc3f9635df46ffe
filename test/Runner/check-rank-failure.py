"""Kills (--mode kill) or freezes (--mode stop, SIGSTOP: a hang) rank 1 of
a two-rank data-parallel run once it has written a checkpoint, and checks
that the run ends non-zero on its own, that the messages name what
happened, and that the last checkpoint still resumes.

usage: check-rank-failure.py --mode kill|stop --mpirun "<mpirun ...>"
           --runner <mp-runner> --step <step.mlir> --dir <scratch dir>
"""

import argparse
import os
import signal
import subprocess
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--mode", choices=["kill", "stop"], required=True)
parser.add_argument("--mpirun", required=True)
parser.add_argument("--runner", required=True)
parser.add_argument("--step", required=True)
parser.add_argument("--dir", required=True)
args = parser.parse_args()

TIMEOUT = 5  # --collective-timeout
# The stated bound: the timeout plus mpirun's clean-up, with room for a
# loaded machine. A run that ends later fails the check; one that never
# ends is killed at HANG.
BOUND = TIMEOUT + 55
HANG = 300


def rank_pid(rank, marker):
    """The pid of the mp-runner process of `rank` in the run using `marker`."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = open("/proc/%s/cmdline" % pid, "rb").read().split(b"\0")
            environ = open("/proc/%s/environ" % pid, "rb").read().split(b"\0")
        except OSError:
            continue
        if (any(marker.encode() in a for a in cmdline) and
                b"OMPI_COMM_WORLD_RANK=%d" % rank in environ and
                any(a.endswith(b"mp-runner") for a in cmdline[:1])):
            return int(pid)
    return None


ckpt = os.path.join(args.dir, "%s.safetensors" % args.mode)
if os.path.exists(ckpt):
    os.remove(ckpt)  # one from an earlier run would be taken as this run's
command = args.mpirun.split() + [
    "-np", "2", args.runner, args.step, "--amp=off", "--no-progress",
    "--steps", "100000000", "--checkpoint", ckpt, "--checkpoint-every", "200",
    "--collective-timeout", str(TIMEOUT)]
run = subprocess.Popen(command, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
start = time.time()
while not os.path.exists(ckpt):
    if run.poll() is not None or time.time() - start > HANG:
        print("FAIL: no checkpoint was written")
        run.kill()
        print(run.communicate()[0])
        sys.exit(1)
    time.sleep(0.05)
victim = rank_pid(1, ckpt)
if victim is None:
    print("FAIL: rank 1's process not found")
    run.kill()
    sys.exit(1)
os.kill(victim, signal.SIGKILL if args.mode == "kill" else signal.SIGSTOP)
hit = time.time()
try:
    output, _ = run.communicate(timeout=HANG)
except subprocess.TimeoutExpired:
    run.kill()
    os.kill(victim, signal.SIGKILL)
    print("FAIL: the run did not end within %d s of losing rank 1" % HANG)
    sys.exit(1)
elapsed = time.time() - hit
if args.mode == "stop":
    try:
        os.kill(victim, signal.SIGKILL)
    except ProcessLookupError:
        pass
print("exit status: %s" % ("non-zero" if run.returncode else "0"))
print("ended within the bound: %s" % (elapsed < BOUND))
if elapsed >= BOUND:
    print("took %.1f s, bound %d s" % (elapsed, BOUND))
for line in output.splitlines():
    if "rank" in line and ("error" in line or "exited" in line or
                           "waited" in line or "aborted" in line):
        print("message: " + line.strip())
# The checkpoint rank 0 wrote last is whole: it resumes.
with open(ckpt, "rb") as f:
    header_size = int.from_bytes(f.read(8), "little")
import json
with open(ckpt, "rb") as f:
    f.seek(8)
    step = int(json.loads(f.read(header_size))["__metadata__"]["step"])
resume = subprocess.run(
    [args.runner, args.step, "--amp=off", "--no-progress", "--resume", ckpt,
     "--steps", str(step + 2), "--eval-samples", "64"],
    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
print("checkpoint resumes: %s" % (resume.returncode == 0))
if resume.returncode:
    print(resume.stdout)
