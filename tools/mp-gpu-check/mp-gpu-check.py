#!/usr/bin/env python3
"""mp-gpu-check: everything mp's CUDA backend must show on a GPU machine,
in one command, reported in OUTDIR/summary.json and OUTDIR/summary.md.

usage: mp-gpu-check OUTDIR [--only STAGE,...] [--skip STAGE,...]
                           [--budget SECONDS] [--limit STAGE=SECONDS ...]

Stages, in order (docs/Install.md says what each proves):
  device       driver, GPU and CUDA libraries; mp-runner --device-info
  cpu          the distribution itself runs here: mp-opt, mp-import-onnx,
               mp-compile and mp-runner (FP32 against bf16) on the CPU
  kernels      mp-cuda-kernel-tests: every CUDA entry point against the
               CPU backend
  integration  the CUDA integration tests (test/Integration/CUDA), run by
               the lit and FileCheck the distribution carries
  training     the MLP, transformer and ResNet examples and an imported
               ONNX transformer trained FP32 against AMP-f16 and AMP-bf16
               on the GPU, accuracy compared as the CPU suites compare it
  memcheck     compute-sanitizer --tool memcheck on a short run of each
               example, where compute-sanitizer exists
  benchmark    benchmarks/cuda_step_times.py: mp FP32/f16/bf16 against the
               machine's PyTorch (eager, autocast, torch.compile) where
               torch imports

Each stage runs under its own time limit (whatever it started is killed at
the limit, so a hang or a crash loses that stage only), and the whole check
under --budget (560 s by default). Without a usable GPU (no
driver, no device, compute capability below 8.0, no cuBLASLt) the GPU
stages are skipped with the reason. Exit status: 0 when no stage failed, 1
when one did, 2 when OUTDIR could not be written (the results then go to a
temporary directory, named in the summary) or the arguments are wrong.

Needs Python 3.8 or later and its standard library only.
"""

import argparse
import datetime
import glob
import json
import os
import platform
import re
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
import traceback

PREFIX = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
BIN = os.path.join(PREFIX, "bin")
LIBEXEC = os.path.join(PREFIX, "libexec", "mp")
SHARE = os.path.join(PREFIX, "share", "mp")
EXAMPLES = os.path.join(SHARE, "examples")
MODELS = os.path.join(SHARE, "models")
CPU_TESTS = os.path.join(SHARE, "test", "Integration", "CPU")

# Seconds per stage; they add up to the default budget. The GPU stages'
# limits are sized for one H100 or H200 (benchmark: 88 s on an H100,
# 110 s on an H200, where a second run went past 120 s; integration and
# memcheck took 11-13 s); --limit changes one.
STAGES = [
    ("device", "device, driver and CUDA libraries", 20),
    ("cpu", "the distribution on the CPU", 40),
    ("kernels", "mp-cuda-kernel-tests", 40),
    ("integration", "CUDA integration tests (lit)", 110),
    ("training", "FP32 vs AMP-f16 vs AMP-bf16 training on the GPU", 110),
    ("memcheck", "compute-sanitizer memcheck", 60),
    ("benchmark", "benchmarks/cuda_step_times.py", 180),
]
GPU_STAGES = {"kernels", "integration", "training", "memcheck", "benchmark"}
DEFAULT_BUDGET = 560
FAILURE_LINES = 15


class StageResult:
    def __init__(self, name, title, limit):
        self.name, self.title, self.limit = name, title, limit
        self.status = "skipped"
        self.seconds = 0.0
        self.reason = ""
        self.details = []
        self.notes = []
        self.table = []
        self.log = None

    def to_json(self):
        return dict(name=self.name, title=self.title, status=self.status,
                    seconds=round(self.seconds, 1), limit=self.limit,
                    reason=self.reason, details=self.details,
                    notes=self.notes, table=self.table, log=self.log)


class StageFailed(Exception):
    """Ends a stage as failed: a one-line reason and the first lines of
    the evidence."""

    def __init__(self, reason, details=(), table=()):
        super().__init__(reason)
        self.reason = reason
        self.details = list(details)
        self.table = list(table)  # what a stage measured before it failed


class SkipStage(Exception):
    """Ends a stage as skipped, with the reason."""


class Runner:
    """Runs the commands of one stage before its deadline, logging each."""

    def __init__(self, log_path, deadline, env):
        self.log_path = log_path
        self.deadline = deadline
        self.env = env

    def remaining(self):
        return self.deadline - time.monotonic()

    def run(self, cmd, cwd=None, env=None):
        """(exit status, output); the exit status is None when the command
        ran past the stage's deadline (it is killed, with everything it
        started)."""
        timeout = self.remaining()
        with open(self.log_path, "a") as log:
            log.write("$ %s\n" % " ".join(cmd))
            log.flush()
            if timeout <= 0:
                log.write("(not started: the stage's time is up)\n")
                return None, ""
            try:
                proc = subprocess.Popen(
                    cmd, cwd=cwd, env=env or self.env, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    start_new_session=True)
            except OSError as e:
                log.write("cannot start: %s\n" % e)
                return 127, "cannot start %s: %s" % (cmd[0], e)
            try:
                out, _ = proc.communicate(timeout=timeout)
                status = proc.returncode
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                out, _ = proc.communicate()
                status = None
            text = out.decode("utf-8", "replace")
            log.write(text)
            if status is None:
                log.write("\n(killed at the stage's time limit)\n")
            elif status < 0:
                log.write("\n(killed by signal %d)\n" % -status)
            log.write("\n")
        return status, text

    def check(self, cmd, what, cwd=None, env=None):
        """Runs `cmd`; a failure ends the stage."""
        status, out = self.run(cmd, cwd=cwd, env=env)
        if status is None:
            raise StageFailed("%s did not finish within the stage's limit"
                              % what, tail(out))
        if status != 0:
            how = ("killed by signal %d" % -status if status < 0
                   else "exit status %d" % status)
            raise StageFailed("%s failed (%s)" % (what, how), tail(out))
        return out


def tail(text, lines=FAILURE_LINES):
    rows = [l for l in text.rstrip().splitlines() if l.strip()]
    return rows[-lines:]


def first_lines(text, lines=FAILURE_LINES):
    rows = [l for l in text.rstrip().splitlines() if l.strip()]
    return rows[:lines]


def tool(name):
    return os.path.join(BIN, name)


def find_program(name, extra_dirs=()):
    found = shutil.which(name)
    if found:
        return found
    for d in extra_dirs:
        for candidate in glob.glob(os.path.join(d, name)):
            if os.access(candidate, os.X_OK):
                return candidate
    return None


def cuda_roots():
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")]
    roots += ["/usr/local/cuda", "/usr/local/cuda-13"]
    roots += sorted(glob.glob("/usr/local/cuda-13.*"), reverse=True)
    return [r for r in roots if r]


def wheel_library_dirs():
    """The CUDA library directories of this Python's nvidia-* wheels."""
    dirs = []
    try:
        packages = site.getsitepackages() + [site.getusersitepackages()]
    except AttributeError:  # some virtual environments
        packages = []
    packages += [p for p in sys.path if p.endswith("-packages")]
    for p in packages:
        for sub in ("cu13/lib", "cublas/lib", "cudnn/lib", "nccl/lib"):
            d = os.path.join(p, "nvidia", sub)
            if os.path.isdir(d) and d not in dirs:
                dirs.append(d)
    return dirs


# ---------------------------------------------------------------------------
# What the machine has
# ---------------------------------------------------------------------------

class Machine:
    """Filled by the device stage; read by the others."""

    def __init__(self):
        self.gpu = None          # "NVIDIA H100 80GB HBM3, compute ..." line
        self.capability = None   # (major, minor)
        self.gpu_problem = None  # why the GPU stages cannot run, or None
        self.libraries = {}      # name -> (found, "13.1.0 at /path" or why)
        self.device_info = ""


def parse_device_info(text, machine):
    m = re.search(r"^  GPU 0: (.+)$", text, re.M)
    if m:
        machine.gpu = m.group(1).strip()
        cc = re.search(r"compute capability (\d+)\.(\d+)", machine.gpu)
        if cc:
            machine.capability = (int(cc.group(1)), int(cc.group(2)))
    for name in ("cuBLASLt", "cuDNN", "NCCL"):
        m = re.search(r"^    %s(?: ([0-9.]+))?: (.+)$" % name, text, re.M)
        if m:
            machine.libraries[name] = (
                (True, "%s at %s" % (m.group(1), m.group(2))) if m.group(1)
                else (False, m.group(2)))


def gpu_problem(info, machine, have_driver):
    """Why the GPU stages cannot run, in one line (the first reason), or
    None when they can: from `mp-runner --device-info` (`info`, already
    parsed into `machine`) and whether any trace of the NVIDIA driver was
    found."""
    no_device = re.search(r"^  no CUDA device: (.+)$", info, re.M)
    if not have_driver:
        return ("no NVIDIA driver: none of /dev/nvidiactl, /dev/nvidia0, "
                "/proc/driver/nvidia/version exists and nvidia-smi is not "
                "installed")
    if "no GPU found" in info:
        return "no GPU: mp-runner finds no NVIDIA device"
    if no_device:
        return "no usable CUDA device: " + no_device.group(1)
    if "CUDA backend:" not in info:
        return "this mp was built without the CUDA backend"
    if not machine.gpu:
        return "mp-runner --device-info lists no GPU"
    if machine.capability and machine.capability < (8, 0):
        return ("GPU 0 has compute capability %d.%d; the CUDA backend needs "
                "8.0 or later (it is built for sm_80 and sm_90, with PTX for "
                "later GPUs)" % machine.capability)
    found, detail = machine.libraries.get("cuBLASLt", (False, ""))
    if not found:
        searched = re.search(r"^    searched, in order: (.+)$", info, re.M)
        return "cuBLASLt: %s%s" % (
            detail or "not reported by mp-runner --device-info",
            "; searched " + searched.group(1) if searched else "")
    return None


def stage_device(r, machine, out):
    notes = []
    driver_files = [p for p in ("/dev/nvidiactl", "/dev/nvidia0",
                                "/proc/driver/nvidia/version")
                    if os.path.exists(p)]
    smi = find_program("nvidia-smi", ["/usr/local/nvidia/bin", "/usr/bin"])
    if smi:
        status, text = r.run([smi, "--query-gpu=name,driver_version,"
                              "compute_cap,memory.total",
                              "--format=csv,noheader"])
        if status == 0 and text.strip():
            notes.append("nvidia-smi: " + text.strip().splitlines()[0])
        else:
            notes.append("nvidia-smi failed: " +
                         " ".join(tail(text, 2)) if text else
                         "nvidia-smi failed")
    else:
        notes.append("nvidia-smi: not found")
    info = r.check([tool("mp-runner"), "--device-info"],
                   "mp-runner --device-info")
    machine.device_info = info
    with open(os.path.join(out, "device-info.txt"), "w") as f:
        f.write(info)
    parse_device_info(info, machine)
    cpu = re.search(r"^CPU: (.+)$", info, re.M)
    if cpu:
        notes.append("CPU: " + cpu.group(1))
    for name in ("cuBLASLt", "cuDNN", "NCCL"):
        if name in machine.libraries:
            notes.append("%s: %s" % (name, machine.libraries[name][1]))

    machine.gpu_problem = gpu_problem(info, machine,
                                      bool(driver_files or smi))
    # The first note is the stage's line in the summary's table.
    if machine.gpu_problem:
        notes.insert(0, "GPU stages skipped: " + machine.gpu_problem)
    else:
        notes.insert(0, "GPU 0: " + machine.gpu)
    return notes


def stage_cpu(r, machine, out):
    work = os.path.join(out, "cpu")
    os.makedirs(work, exist_ok=True)
    r.check([tool("mp-opt"), os.path.join(EXAMPLES, "transformer_step.mlir"),
             "--tg-mixed-precision", "-o", os.path.join(work, "amp.mlir")],
            "mp-opt --tg-mixed-precision on transformer_step.mlir")
    model = os.path.join(MODELS, "transformer.onnx")
    r.check([tool("mp-import-onnx"), model, "--batch-size", "8", "-o",
             os.path.join(work, "transformer.mlir")],
            "mp-import-onnx transformer.onnx")
    r.check([tool("mp-compile"), os.path.join(EXAMPLES, "mlp_step.mlir"),
             "--amp=bf16", "-o", os.path.join(work, "step.o"), "--header",
             os.path.join(work, "step.h")], "mp-compile mlp_step.mlir")
    text = r.check([tool("mp-runner"), os.path.join(EXAMPLES, "mlp_step.mlir"),
                    "--backend=cpu", "--compare", "--amp=bf16", "--steps",
                    "200", "--eval-samples", "1024", "--no-progress"],
                   "mp-runner --backend=cpu --compare --amp=bf16")
    notes = [l.strip() for l in text.splitlines()
             if re.search(r"(fp32|bf16): final loss", l)]
    text = r.check([tool("mp-runner"), os.path.join(MODELS, "cnn.onnx"),
                    "--backend=cpu", "--batch-size", "8", "--amp=bf16",
                    "--steps", "3", "--eval-samples", "64", "--no-progress"],
                   "mp-runner cnn.onnx --backend=cpu")
    cuda_tests = tool("mp-cuda-kernel-tests")
    if os.path.exists(cuda_tests):
        text = r.check([cuda_tests, "--cpu-only"],
                       "mp-cuda-kernel-tests --cpu-only")
        notes += ["mp-cuda-kernel-tests --cpu-only: " + l.strip()
                  for l in text.splitlines()[-1:]]
    return notes


def stage_kernels(r, machine, out):
    status, text = r.run([tool("mp-cuda-kernel-tests")])
    failures = [l for l in text.splitlines() if "FAIL" in l]
    total = re.search(r"(\d+) passed, (\d+) failed", text)
    if status is None:
        raise StageFailed("did not finish within the stage's limit",
                          failures or tail(text))
    if status != 0 or failures or not total:
        raise StageFailed("%s (exit status %s)" % (
            total.group(0) if total else "no result line", status),
            failures[:FAILURE_LINES] or tail(text))
    seed = re.search(r"seed \d+", text)
    return [total.group(0) + ("; " + seed.group(0) if seed else "")]


def lit_command(out, paths, extra=()):
    launcher = ("import sys; sys.path.insert(0, %r); "
                "sys.argv[0] = 'lit'; from lit.main import main; main()"
                % os.path.join(SHARE, "lit"))
    return ([sys.executable, "-c", launcher, "-v", "--show-unsupported",
             "-j", "4", "--param", "exec_root=" + os.path.join(out, "lit")]
            + list(extra) + paths)


def stage_integration(r, machine, out):
    tests = os.path.join(SHARE, "test", "Integration", "CUDA")
    # kernels.test is the kernels stage's command; it is not run twice.
    status, text = r.run(lit_command(out, [tests],
                                     ["--filter-out", "kernels\\.test"]))
    results = re.findall(r"^(PASS|FAIL|UNSUPPORTED|XFAIL|XPASS|UNRESOLVED|"
                         r"TIMEOUT): MP-distribution :: (\S+)", text, re.M)
    passed = [t for s, t in results if s == "PASS"]
    bad = [(s, t) for s, t in results if s not in ("PASS", "XFAIL")]
    summary = "%d passed, %d not" % (len(passed), len(bad))
    if status is None:
        raise StageFailed("lit did not finish within the stage's limit (%s "
                          "so far)" % summary, tail(text))
    if status != 0 or bad or not passed:
        details = ["%s: %s" % (s, t) for s, t in bad]
        # The first lines of the first failure's output.
        m = re.search(r"\*{20} TEST 'MP-distribution :: [^']+' FAILED "
                      r"\*{20}\n(.*?)\n\*{20}\n", text, re.S)
        if m:
            details += first_lines(m.group(1).split("Command Output")[-1])
        raise StageFailed("lit: %s (exit status %s)" % (summary, status),
                          details or tail(text))
    return ["lit: %s: %s" % (summary, ", ".join(passed))]


TRAINING = [
    # (label, model, mp-runner options, steps, points, loss gap, learned),
    # the CPU suites' settings (test/Integration/CPU, test/Target/ONNX).
    ("MLP example", os.path.join(EXAMPLES, "mlp_step.mlir"), "", 1500, 0.5,
     0.02, None),
    ("transformer example", os.path.join(EXAMPLES, "transformer_step.mlir"),
     "--eval-samples 1024", 300, 1.0, 0.05, 0.95),
    ("ResNet example", os.path.join(EXAMPLES, "resnet.mlir"),
     "--optimizer=adam --lr=0.003 --eval-samples 8192", 600, 1.0, 0.05, None),
    ("ONNX transformer", os.path.join(MODELS, "transformer.onnx"),
     "--batch-size 32 --optimizer=adam --train-samples 16384 "
     "--eval-samples 4096", 600, 0.5, 0.05, 0.95),
]


def stage_training(r, machine, out):
    script = os.path.join(CPU_TESTS, "check-amp-training.py")
    notes, failures = [], []
    for label, model, options, steps, points, gap, learned in TRAINING:
        for amp in ("f16", "bf16"):
            runner = "%s --backend=cuda %s" % (tool("mp-runner"), options)
            cmd = [sys.executable, script, runner.strip(), model, amp,
                   str(steps), str(points), str(gap)]
            if learned:
                cmd.append(str(learned))
            status, text = r.run(cmd)
            line = next((l for l in text.splitlines()
                         if l.startswith("seed ")), "")
            if status == 0 and "PASS" in text:
                notes.append("%s, %s: %s" % (label, amp, line))
            else:
                why = ("not finished within the stage's limit"
                       if status is None else "exit status %s" % status)
                failures.append("%s, %s: %s" % (label, amp, why))
                failures += ["  " + l for l in tail(text, 6)]
            if status is None:
                raise StageFailed("%s, %s did not finish within the stage's "
                                  "limit" % (label, amp), failures)
    if failures:
        raise StageFailed("%d of %d comparisons failed" % (
            sum(1 for f in failures if not f.startswith("  ")),
            2 * len(TRAINING)), failures)
    return notes


def stage_memcheck(r, machine, out):
    sanitizer = find_program(
        "compute-sanitizer", [os.path.join(root, "bin") for root in cuda_roots()]
        + ["/usr/local/cuda*/compute-sanitizer",
           "/opt/nvidia/*/compute-sanitizer"])
    if not sanitizer:
        raise SkipStage("compute-sanitizer is not installed (not on PATH, "
                        "not in the CUDA toolkit's bin/)")
    notes, failures = [], []
    runs = [("mlp_step.mlir", os.path.join(EXAMPLES, "mlp_step.mlir"), []),
            ("transformer_step.mlir",
             os.path.join(EXAMPLES, "transformer_step.mlir"), []),
            ("resnet.mlir", os.path.join(EXAMPLES, "resnet.mlir"), []),
            ("transformer.onnx", os.path.join(MODELS, "transformer.onnx"),
             ["--batch-size", "8"])]
    for label, model, extra in runs:
        for amp in ("f16", "bf16"):
            cmd = [sanitizer, "--tool", "memcheck", "--error-exitcode", "99",
                   "--print-limit", "20", tool("mp-runner"), model,
                   "--backend=cuda", "--amp=" + amp, "--steps", "2",
                   "--eval-samples", "64", "--cuda-graphs=false",
                   "--no-progress"] + extra
            status, text = r.run(cmd)
            summary = re.search(r"ERROR SUMMARY: (\d+) errors?", text)
            if status == 0 and summary and summary.group(1) == "0":
                notes.append("%s %s: 0 errors" % (label, amp))
                continue
            why = ("not finished within the stage's limit" if status is None
                   else summary.group(0) if summary
                   else "exit status %s" % status)
            failures.append("%s %s: %s" % (label, amp, why))
            failures += ["  " + l for l in first_lines(
                "\n".join(l for l in text.splitlines()
                          if "=========" in l or "error" in l.lower()), 8)]
            if status is None:
                raise StageFailed(failures[0], failures)
    if failures:
        raise StageFailed("memcheck reported errors", failures)
    return notes


def stage_benchmark(r, machine, out):
    script = os.path.join(SHARE, "benchmarks", "cuda_step_times.py")
    probe = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.__version__, "
         "torch.cuda.is_available())"], capture_output=True, text=True,
        timeout=max(5, min(60, r.remaining())))
    notes = []
    if probe.returncode != 0:
        notes.append("PyTorch does not import (%s): mp's rows only" %
                     (tail(probe.stderr, 1) or ["?"])[0])
    else:
        notes.append("PyTorch %s" % probe.stdout.strip())
    status, text = r.run([sys.executable, script, "--build", PREFIX,
                          "--steps", "20"])
    table = [l for l in text.splitlines() if l.startswith("|")]
    misses = [l for l in text.splitlines() if l.startswith("target not met")]
    errors = [l for l in text.splitlines() if " failed: " in l]
    if status is None:
        raise StageFailed("the benchmark did not finish within the stage's "
                          "limit (%d table rows so far)"
                          % max(0, len(table) - 2), tail(text),
                          table if len(table) > 2 else ())
    # Exit status 1 means targets missed: the benchmark ran.
    if status not in (0, 1) or len(table) <= 2:
        raise StageFailed("the benchmark failed (exit status %s)" % status,
                          tail(text))
    machine_line = next((l for l in text.splitlines()
                         if l.startswith("machine:")), "")
    return [machine_line] + notes + errors + misses, table


STAGE_FUNCTIONS = {
    "device": stage_device, "cpu": stage_cpu, "kernels": stage_kernels,
    "integration": stage_integration, "training": stage_training,
    "memcheck": stage_memcheck, "benchmark": stage_benchmark,
}


# ---------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------

def write_atomically(path, text):
    """Writes `path` through a temporary renamed over it; a symbolic link is
    written through to the file it names (docs/Runtime.md: files are the
    user's)."""
    path = os.path.realpath(path)
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".summary-", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def markdown(report):
    lines = ["# mp-gpu-check: %s" % report["result"], ""]
    for note in report["notes"]:
        lines.append("- " + note)
    if report["notes"]:
        lines.append("")
    lines += ["| stage | status | seconds | limit | note |",
              "|---|---|---:|---:|---|"]
    problem = report["gpu"]["problem"]
    for s in report["stages"]:
        note = s["reason"] or (s["notes"][0] if s["notes"] else "")
        if problem and note == problem:
            note = "no usable GPU (device, above)"
        lines.append("| %s | %s | %.1f | %d | %s |" % (
            s["name"], s["status"], s["seconds"], s["limit"],
            note.replace("|", "\\|")))
    for s in report["stages"]:
        if not (s["details"] or len(s["notes"]) > 1):
            continue
        lines += ["", "## %s: %s" % (s["name"], s["title"])]
        if s["status"] == "failed":
            lines.append("")
            lines.append("```")
            lines += s["details"]
            lines.append("```")
        for note in s["notes"]:
            lines.append("- " + note)
    for s in report["stages"]:
        if s["table"]:
            lines += ["", "## Benchmark", ""] + s["table"]
    lines += ["", "Logs: %s" % report["outdir"], ""]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(
        prog="mp-gpu-check", description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("outdir")
    parser.add_argument("--only", default="")
    parser.add_argument("--skip", default="")
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET)
    parser.add_argument("--limit", action="append", default=[],
                        metavar="STAGE=SECONDS")
    args = parser.parse_args()

    names = [name for name, _, _ in STAGES]
    limits = {name: limit for name, _, limit in STAGES}
    for item in args.limit:
        name, _, value = item.partition("=")
        try:
            limits[name] = float(value)
        except ValueError:
            parser.error("--limit %s: expected STAGE=SECONDS" % item)
        if name not in limits or limits[name] <= 0:
            parser.error("--limit %s: stages are %s, seconds positive"
                         % (item, ", ".join(names)))
    only = [s for s in args.only.split(",") if s]
    skip = [s for s in args.skip.split(",") if s]
    for s in only + skip:
        if s not in names:
            parser.error("unknown stage '%s' (stages: %s)"
                         % (s, ", ".join(names)))

    started = time.monotonic()
    report_notes = []
    exit_status = 0
    outdir = os.path.abspath(args.outdir)
    try:
        os.makedirs(outdir, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=outdir, prefix=".probe-")
        probe.close()
    except OSError as e:
        fallback = tempfile.mkdtemp(prefix="mp-gpu-check-")
        report_notes.append("OUTDIR %s is not writable (%s); the results are "
                            "in %s" % (outdir, e.strerror or e, fallback))
        print("mp-gpu-check: " + report_notes[-1], file=sys.stderr)
        outdir = fallback
        exit_status = 2

    env = dict(os.environ)
    wheels = wheel_library_dirs()
    if wheels:
        env["MP_CUDA_LIBRARY_PATH"] = os.pathsep.join(
            [p for p in [env.get("MP_CUDA_LIBRARY_PATH")] if p] + wheels)
    env["PATH"] = os.pathsep.join([BIN, LIBEXEC, env.get("PATH", "")])
    report_notes.append("mp distribution: %s" % PREFIX)
    report_notes.append("Python %s (%s); %s" % (
        platform.python_version(), sys.executable, platform.platform()))

    machine = Machine()
    results = []
    for name, title, _ in STAGES:
        result = StageResult(name, title, limits[name])
        results.append(result)
        if only and name not in only or name in skip:
            result.reason = "not asked for (--only/--skip)"
            continue
        left = args.budget - (time.monotonic() - started)
        if left <= 1:
            result.reason = "the check's time budget (--budget %g s) is " \
                            "spent" % args.budget
            continue
        if name in GPU_STAGES and machine.gpu_problem:
            result.reason = machine.gpu_problem
            continue
        if name in GPU_STAGES and not machine.device_info:
            result.reason = "the device stage did not run, so no GPU is known"
            continue
        result.limit = min(limits[name], left)
        result.log = os.path.join(outdir, name + ".log")
        open(result.log, "w").close()
        r = Runner(result.log, time.monotonic() + result.limit, env)
        begin = time.monotonic()
        print("mp-gpu-check: %s (%s, at most %d s)" % (name, title,
                                                       result.limit),
              flush=True)
        try:
            value = STAGE_FUNCTIONS[name](r, machine, outdir)
            if isinstance(value, tuple):
                result.notes, result.table = value
            else:
                result.notes = value or []
            result.status = "passed"
        except SkipStage as e:
            result.status = "skipped"
            result.reason = str(e)
        except StageFailed as e:
            result.status = "failed"
            result.reason = e.reason
            result.details = e.details
            result.table = e.table
        except Exception as e:  # a bug here must not lose the other stages
            result.status = "failed"
            result.reason = "mp-gpu-check: %s: %s" % (type(e).__name__, e)
            result.details = tail(traceback.format_exc())
        result.seconds = time.monotonic() - begin
        print("mp-gpu-check: %s %s in %.1f s%s" % (
            name, result.status, result.seconds,
            ": " + result.reason if result.reason else ""), flush=True)

    failed = [s.name for s in results if s.status == "failed"]
    if failed and exit_status == 0:
        exit_status = 1
    report = dict(
        result="failed (%s)" % ", ".join(failed) if failed else "passed",
        date=datetime.datetime.now().isoformat(timespec="seconds"),
        seconds=round(time.monotonic() - started, 1),
        outdir=outdir, prefix=PREFIX, notes=report_notes,
        gpu=dict(name=machine.gpu, problem=machine.gpu_problem,
                 libraries={k: dict(found=f, detail=d)
                            for k, (f, d) in machine.libraries.items()}),
        stages=[s.to_json() for s in results])
    text = markdown(report)
    try:
        write_atomically(os.path.join(outdir, "summary.json"),
                         json.dumps(report, indent=2) + "\n")
        write_atomically(os.path.join(outdir, "summary.md"), text)
    except OSError as e:
        print("mp-gpu-check: cannot write the summary in %s: %s"
              % (outdir, e), file=sys.stderr)
        exit_status = 2
    print(text)
    return exit_status


if __name__ == "__main__":
    sys.exit(main())
