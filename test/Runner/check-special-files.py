"""Writes mp-runner's summary into a FIFO (and, as root, into a device node
made with mknod: a character device like /dev/null) and checks that the
special file is still what it was afterwards, and that a reader of the FIFO
received the whole summary.

usage: check-special-files.py <mp-runner> <model> <workdir> [--device]
"""

import json
import os
import stat
import subprocess
import sys
import threading


def run(runner, model, summary):
    out = subprocess.run([runner, model, "--backend=cpu", "--amp=off",
                          "--steps", "2", "--no-progress", "--eval-samples",
                          "64", "--summary", summary],
                         capture_output=True, text=True, timeout=300)
    if out.returncode:
        sys.exit("FAIL: mp-runner exited %d:\n%s" % (out.returncode,
                                                     out.stderr))


def main():
    runner, model, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    fifo = os.path.join(work, "summary.fifo")
    if os.path.exists(fifo):
        os.unlink(fifo)
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(
        target=lambda: received.append(open(fifo, "rb").read()))
    reader.start()
    run(runner, model, fifo)
    reader.join(timeout=60)
    if not received:
        sys.exit("FAIL: nothing arrived through the FIFO")
    summary = json.loads(received[0])
    print("FIFO: still a FIFO: %s; the reader got the summary of %d steps"
          % (stat.S_ISFIFO(os.lstat(fifo).st_mode), summary["steps"]))
    if "--device" in sys.argv:
        node = os.path.join(work, "null")
        if os.path.exists(node):
            os.unlink(node)
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        run(runner, model, node)
        print("device node: still a character device: %s"
              % stat.S_ISCHR(os.lstat(node).st_mode))


if __name__ == "__main__":
    main()
