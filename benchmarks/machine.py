"""What the CPU benchmarks share: the machine they ran on, and running a
command that must succeed."""

import platform
import subprocess
import sys


def cpu_flags():
    """The instruction-set flags that decide mp's CPU paths, as /proc/cpuinfo
    lists them."""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("flags"):
                flags = line.split(":", 1)[1].split()
                keep = ["avx2", "f16c", "avx512f", "avx512_bf16", "amx_bf16"]
                return [f for f in keep if f in flags]
    except OSError:
        pass
    return []


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def run(command, env, what):
    """Runs `command`; its output, or an exit naming `what` if it fails."""
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if done.returncode:
        sys.exit("%s failed:\n%s" % (what, done.stdout[-3000:]))
    return done.stdout
