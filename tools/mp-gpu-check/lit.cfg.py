# -*- Python -*-
# lit configuration of the distribution's copy of the CUDA integration tests
# (share/mp/test/Integration/CUDA, from test/Integration/CUDA), which
# mp-gpu-check runs with the distribution's tools, the lit it carries and
# its FileCheck (libexec/mp). The test files are the repository's, byte for
# byte; this file gives them the substitutions and features test/lit.cfg.py
# gives them in a build tree. Outputs go to --param exec_root=DIR (the
# distribution itself may be read-only).

import os
import subprocess
import sys

import lit.formats

config.name = "MP-distribution"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
exec_root = lit_config.params.get("exec_root")
if not exec_root:
    lit_config.fatal("run with --param exec_root=<a writable directory>")
config.test_exec_root = os.path.abspath(exec_root)

share = os.path.dirname(config.test_source_root)  # <prefix>/share/mp
prefix = os.path.dirname(os.path.dirname(share))
tools = os.path.join(prefix, "bin")
libexec = os.path.join(prefix, "libexec", "mp")

config.environment["PATH"] = os.pathsep.join(
    [tools, libexec, os.environ.get("PATH", "")])
for var in ["HOME", "TMPDIR", "LD_LIBRARY_PATH", "MP_CUDA_LIBRARY_PATH",
            "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "VIRTUAL_ENV",
            "CONDA_PREFIX", "PYTHONPATH"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]

runner = os.path.join(tools, "mp-runner")
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%mp_src_root", share))
config.substitutions.append(("%cpu_runner", runner + " --backend=cpu"))
config.substitutions.append(("%cuda_runner", runner + " --backend=cuda"))

# As in test/lit.cfg.py: what `mp-runner --device-info` finds, in the
# tests' environment.
config.available_features.add("cuda-backend")
try:
    device_info = subprocess.run([runner, "--device-info"],
                                 capture_output=True, text=True, timeout=120,
                                 env=config.environment).stdout
except (OSError, subprocess.SubprocessError):
    device_info = ""
if "  GPU 0:" in device_info:
    config.available_features.add("cuda-device")
else:
    lit_config.note("no CUDA device: the CUDA tests are reported UNSUPPORTED")
