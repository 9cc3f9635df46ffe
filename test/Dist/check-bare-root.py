"""Unpacks the relocatable distribution into a bare Debian 12 root and runs
it there, the way a GPU machine without LLVM, MLIR, oneDNN, protobuf, ONNX
or OpenBLAS would.

The root is `debootstrap --variant=minbase bookworm` plus python3 (which
mp-gpu-check needs; it brings none of those libraries), made once and kept
in <cache> (made in a temporary directory and renamed, so an interrupted
debootstrap leaves nothing half made). The distribution is unpacked afresh
under /opt each time, /proc is mounted while the tools run (the loader
needs /proc/self/exe for $ORIGIN).

Checks, each printed on a line of its own:
  - none of the excluded packages is installed in the root;
  - every ELF file of the distribution has every dependency resolved, from
    the distribution or from glibc, as `ldd` in the root reports it (the
    NVIDIA libraries are opened at run time, so none is a dependency);
  - mp-runner --device-info runs and says cuBLASLt is missing, and where it
    looked;
  - mp-runner trains the MLP example in AMP-bf16;
  - mp-gpu-check passes its CPU stages and skips the GPU stages, saying
    why; an unwritable OUTDIR is reported and exits 2.

usage: check-bare-root.py <mp-...tar.xz> <cache> <workdir>
       check-bare-root.py --probe   (exit 0 where the check can run; else
                                    print why: not root, no debootstrap, no
                                    mirror)
"""

import json
import os
import re
import shutil
import socket
import subprocess
import urllib.parse
import sys
import tempfile

EXCLUDED = re.compile(r"llvm|mlir|dnnl|onednn|onnx|protobuf|openblas|blas")
GLIBC = re.compile(r"^(libc|libm|libdl|librt|libpthread|libresolv)\.so\.\d+$"
                   r"|^ld-linux-x86-64\.so\.2$|^linux-vdso\.so\.1$")


def mirror():
    """The Debian mirror the host's apt uses."""
    for path in ["/etc/apt/sources.list.d/debian.sources"]:
        if os.path.exists(path):
            for line in open(path):
                if line.startswith("URIs:"):
                    return line.split()[1]
    if os.path.exists("/etc/apt/sources.list"):
        for line in open("/etc/apt/sources.list"):
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "deb" and "security" not in line:
                return parts[-3] if parts[1].startswith("[") else parts[1]
    return "http://deb.debian.org/debian"


def make_root(cache):
    if os.path.exists(os.path.join(cache, "etc", "debian_version")):
        return cache
    parent = os.path.dirname(cache)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".bare-root-", dir=parent)
    cmd = ["debootstrap", "--variant=minbase", "--include=python3",
           "bookworm", tmp, mirror()]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        shutil.rmtree(tmp, ignore_errors=True)
        sys.exit("debootstrap failed:\n" + out.stdout[-2000:] +
                 out.stderr[-2000:])
    os.rename(tmp, cache)
    return cache


CHROOT = shutil.which("chroot", path=os.environ.get("PATH", "") +
                      ":/usr/sbin:/sbin") or "chroot"


def chroot(root, *cmd, check=True):
    out = subprocess.run([CHROOT, root] + list(cmd), capture_output=True,
                         text=True, env={"PATH": "/usr/bin:/bin",
                                         "HOME": "/root", "LANG": "C.UTF-8"})
    if check and out.returncode:
        sys.exit("FAIL: in the root, %s exited %d:\n%s%s" % (
            " ".join(cmd), out.returncode, out.stdout[-3000:],
            out.stderr[-3000:]))
    return out


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def probe():
    if os.geteuid() != 0:
        sys.exit(print("not root") or 1)
    if not shutil.which("debootstrap", path=os.environ.get("PATH", "") +
                        ":/usr/sbin:/sbin"):
        sys.exit(print("debootstrap is not installed") or 1)
    url = urllib.parse.urlparse(mirror())
    try:
        socket.create_connection((url.hostname, url.port or 80),
                                 timeout=5).close()
    except OSError as e:
        sys.exit(print("the Debian mirror %s cannot be reached: %s"
                       % (url.hostname, e)) or 1)


def main():
    if sys.argv[1:] == ["--probe"]:
        return probe()
    tarball, cache, work = sys.argv[1:4]
    root = make_root(os.path.abspath(cache))
    version = open(os.path.join(root, "etc", "debian_version")).read().strip()
    packages = chroot(root, "dpkg-query", "-W", "-f=${Package}\n").stdout
    installed = packages.split()
    excluded = [p for p in installed if EXCLUDED.search(p)]
    print("bare root: Debian %s minbase + python3, %d packages; excluded "
          "packages installed: %s" % (version, len(installed),
                                      ", ".join(excluded) or "none"))
    if excluded:
        sys.exit("FAIL: the root is not bare")

    opt = os.path.join(root, "opt")
    for entry in os.listdir(opt):
        shutil.rmtree(os.path.join(opt, entry))
    names = subprocess.run(["tar", "-tJf", tarball], check=True,
                           capture_output=True, text=True).stdout.split()
    subprocess.run(["tar", "-C", opt, "-xJf", tarball], check=True)
    top = names[0].split("/")[0]
    prefix = "/opt/" + top
    host_prefix = os.path.join(opt, top)
    print("unpacked %s into /opt (%d entries)" % (os.path.basename(tarball),
                                                  len(names)))

    proc = os.path.join(root, "proc")
    subprocess.run(["mount", "-t", "proc", "proc", proc], check=True)
    try:
        run_checks(root, prefix, host_prefix, work)
    finally:
        subprocess.run(["umount", proc])


def run_checks(root, prefix, host_prefix, work):
    # Every ELF file's dependencies, as the root's loader resolves them.
    elves, from_dist, from_glibc = 0, set(), set()
    for sub in ("bin", "lib", "libexec/mp"):
        directory = os.path.join(host_prefix, sub)
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name)
            if not os.path.isfile(path) or not is_elf(path):
                continue
            elves += 1
            out = chroot(root, "ldd", prefix + "/" + sub + "/" + name).stdout
            for line in out.splitlines():
                m = re.match(r"\s*(\S+)(?: => (\S+))?", line)
                if not m or line.strip().startswith("statically"):
                    continue
                lib, where = m.group(1), m.group(2)
                if where == "not" or "not found" in line:
                    sys.exit("FAIL: %s/%s: %s is not found" % (sub, name, lib))
                if where and os.path.normpath(where).startswith(prefix + "/"):
                    from_dist.add(lib)
                elif GLIBC.match(os.path.basename(where or lib)):
                    from_glibc.add(os.path.basename(where or lib))
                else:
                    sys.exit("FAIL: %s/%s: %s resolves outside the "
                             "distribution and glibc: %s" % (sub, name, lib,
                                                              where))
    print("%d ELF files: every dependency resolves, %d libraries from the "
          "distribution, glibc's: %s" % (elves, len(from_dist),
                                         " ".join(sorted(from_glibc))))

    info = chroot(root, prefix + "/bin/mp-runner", "--device-info").stdout
    for line in info.splitlines():
        if "cuBLASLt" in line or "searched, in order" in line or \
                "no GPU" in line:
            print("device-info:" + line)

    out = chroot(root, prefix + "/bin/mp-runner",
                 prefix + "/share/mp/examples/mlp_step.mlir", "--amp=bf16",
                 "--steps", "50", "--no-progress").stdout
    print("mlp_step.mlir: " + next(l.strip() for l in out.splitlines()
                                   if "final loss" in l))

    check = chroot(root, prefix + "/bin/mp-gpu-check", "/tmp/check",
                   check=False)
    if check.returncode:
        sys.exit("FAIL: mp-gpu-check exited %d:\n%s%s" % (
            check.returncode, check.stdout[-3000:], check.stderr[-3000:]))
    summary = json.load(open(os.path.join(root, "tmp", "check",
                                          "summary.json")))
    print("mp-gpu-check: %s; summary.md %s" % (
        summary["result"],
        "written" if os.path.exists(os.path.join(root, "tmp", "check",
                                                 "summary.md")) else "MISSING"))
    for stage in summary["stages"]:
        print("  %s: %s%s" % (stage["name"], stage["status"],
                              " (" + stage["reason"] + ")" if stage["reason"]
                              else ""))

    bad = chroot(root, prefix + "/bin/mp-gpu-check", "/etc/hostname/out",
                 "--only", "device", check=False)
    line = next((l for l in bad.stderr.splitlines() if "not writable" in l),
                "")
    print("unwritable OUTDIR: exit %d: %s" % (bad.returncode, line))


if __name__ == "__main__":
    main()
