# -*- Python -*-
# lit configuration of the mp regression suite. lit.site.cfg.py forwards the
# CMake values; everything else is decided here.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "MP"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.mp_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%mp_src_root", config.mp_src_root))
config.substitutions.append(("%mp_obj_root", config.mp_obj_root))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%cmake_generator", config.cmake_generator))
config.substitutions.append(("%cmake", config.cmake_command))
config.substitutions.append(("%mlir_dir", config.mlir_dir))
config.substitutions.append(("%cxx", config.cxx_compiler))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP",
                                    # pip, for the virtual environments
                                    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
                                    "http_proxy", "https_proxy", "no_proxy",
                                    "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL",
                                    "PIP_CERT", "PIP_FIND_LINKS",
                                    "PIP_DEFAULT_TIMEOUT"])
llvm_config.use_default_substitutions()

# `not`, `count` and FileCheck come from the LLVM tools directory.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.mp_tools_dir, append_path=True)

# mp-runner pinned to a backend, for the integration suites that run on both.
runner = os.path.join(config.mp_tools_dir, "mp-runner")
config.substitutions.append(("%cpu_runner", runner + " --backend=cpu"))
config.substitutions.append(("%cuda_runner", runner + " --backend=cuda"))

tool_dirs = [config.mp_tools_dir, config.llvm_tools_dir]
tools = ["mp-opt", "mlir-opt", "mp-runtime-tests", "mp-fast-path-tests",
         "mp-runner", "mp-compile", "mp-grad-check", "mp-import-onnx", "mp-onnx-test",
         "mp-cuda-kernel-tests", "mp-mlir-fuzzer", "mp-onnx-fuzzer",
         "mp-safetensors-fuzzer", "mp-npy-fuzzer", "mp-policy-fuzzer",
         "mp-collectives-tests"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# The sanitized tree (utils/mp test --sanitize): asan and ubsan, and
# libfuzzer where the fuzz targets link libFuzzer (else they replay the files
# they are given). Under ASan a leak is an error, UBSan stops at the first
# report, and both print a stack with symbols.
sanitizers = config.mp_sanitizer.lower().split(";")
if "address" in sanitizers:
    config.available_features.add("asan")
    config.environment["ASAN_OPTIONS"] = (
        "detect_leaks=1:abort_on_error=0:strict_string_checks=1:"
        "detect_stack_use_after_return=1:check_initialization_order=1")
    config.environment["LSAN_OPTIONS"] = "suppressions=" + os.path.join(
        config.mp_src_root, "utils", "sanitizers", "lsan.supp")
if "undefined" in sanitizers:
    config.available_features.add("ubsan")
    config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
# A program built against this tree's libraries (find_package(MP)) needs
# the same instrumentation at its link.
sanitizer_flags = [{"address": "-fsanitize=address",
                    "undefined": "-fsanitize=undefined"}[s]
                   for s in sanitizers if s in ("address", "undefined")]
if config.mp_libfuzzer:
    sanitizer_flags.append("-fsanitize=fuzzer-no-link")
config.substitutions.append(
    ("%mp_cmake_sanitizer_flags",
     "'-DCMAKE_CXX_FLAGS=%s'" % " ".join(sanitizer_flags)
     if sanitizer_flags else ""))
if sanitizers != [""]:
    lit_config.note("sanitizers: " + config.mp_sanitizer)
    llvm_symbolizer = os.path.join(config.llvm_tools_dir, "llvm-symbolizer")
    if os.path.exists(llvm_symbolizer):
        config.environment["ASAN_SYMBOLIZER_PATH"] = llvm_symbolizer
if config.mp_libfuzzer:
    config.available_features.add("libfuzzer")

# The mlir-opt plugin exists where a shared libMLIR was found; built with
# AddressSanitizer it cannot load into Debian's mlir-opt, which is not.
if os.path.exists(os.path.join(config.mp_obj_root, "lib", "MPPlugin.so")):
    if "address" in config.mp_sanitizer.lower().split(";"):
        lit_config.note("sanitized: the mlir-opt plugin test is reported "
                        "UNSUPPORTED (an ASan plugin does not load into an "
                        "mlir-opt built without it)")
    else:
        config.available_features.add("mlir-opt-plugin")

# `--param cpu_isa=avx2` (or `scalar`) runs the suite on the CPU kernels of
# an older instruction set, as MP_CPU_ISA caps them, with oneDNN capped to
# match: on an AVX-512 machine, the AVX2 paths a CPU without AVX-512 takes.
# ctest's check-mp-avx2 is that run (test/CMakeLists.txt).
cpu_isa = lit_config.params.get("cpu_isa")
if cpu_isa:
    dnnl_isa = {"avx2": "AVX2", "scalar": "SSE41"}.get(cpu_isa)
    if dnnl_isa is None:
        lit_config.fatal("cpu_isa=%s: expected avx2 or scalar" % cpu_isa)
    config.environment["MP_CPU_ISA"] = cpu_isa
    config.environment["DNNL_MAX_CPU_ISA"] = dnnl_isa
    lit_config.note("CPU kernels capped: MP_CPU_ISA=%s, DNNL_MAX_CPU_ISA=%s"
                    % (cpu_isa, dnnl_isa))

# What `mp-runner --device-info` finds. The CUDA backend: built
# (cuda-backend) and, with a GPU, runnable (cuda-device); tests of the GPU
# declare `REQUIRES: cuda-device` and are reported UNSUPPORTED, not passed,
# on machines without one. cpu-bf16: the CPU backend multiplies bf16 on bf16
# instructions, so --amp=auto picks bf16 there.
import subprocess
try:
    # In the tests' environment, not lit's: MP_REFERENCE_KERNELS or
    # MP_CPU_ISA in lit's would change the answer the tests do not see.
    device_info = subprocess.run(
        [os.path.join(config.mp_tools_dir, "mp-runner"), "--device-info"],
        capture_output=True, text=True, timeout=120,
        env=config.environment).stdout
except (OSError, subprocess.SubprocessError):
    device_info = ""
if "--amp=auto on the CPU: bf16" in device_info:
    config.available_features.add("cpu-bf16")
# cpu-avx2: the CPU kernels have AVX2 with FMA (or more), so the runtime's
# packed GEMM has a kernel here.
if "AVX2: yes" in device_info:
    config.available_features.add("cpu-avx2")
# dnnl: the CPU runtime runs convolutions and GEMMs on oneDNN.
if config.mp_has_dnnl:
    config.available_features.add("dnnl")
if config.mp_has_cuda:
    config.available_features.add("cuda-backend")
    if "  GPU 0:" in device_info:
        config.available_features.add("cuda-device")
    else:
        lit_config.note("no CUDA device: the CUDA tests are reported UNSUPPORTED")

# Data-parallel runs (mpi): built with MPI, and Open MPI's mpirun here.
# %mpirun starts ranks on this machine whatever its core count
# (--oversubscribe), as root too (containers), with shared-memory transfers
# that need no ptrace permission.
import shutil
mpirun = shutil.which("mpirun")
if config.mp_has_mpi and mpirun:
    config.available_features.add("mpi")
    flags = ["--oversubscribe", "--mca", "btl_vader_single_copy_mechanism",
             "none"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        flags.append("--allow-run-as-root")
    launcher = [mpirun]
    # Under ASan, the ranks report Open MPI's own allocations as leaks: its
    # plugins are unloaded at MPI_Finalize, so the stacks end in unknown
    # modules that no suppression can name. The ranks run without leak
    # detection; everything else ASan and UBSan check still applies (and
    # the rest of the suite checks mp's code for leaks).
    if "asan" in config.available_features:
        launcher = ["env", "ASAN_OPTIONS=" + config.environment[
            "ASAN_OPTIONS"].replace("detect_leaks=1", "detect_leaks=0"),
            mpirun]
    config.substitutions.append(("%mpirun", " ".join(launcher + flags)))
    for var in ("HOME", "TMPDIR"):
        if var in os.environ:
            config.environment[var] = os.environ[var]
elif config.mp_has_mpi:
    lit_config.note("no mpirun: the data-parallel tests are reported "
                    "UNSUPPORTED")
# Two "hosts" on this machine (test/Runner/Inputs/two-hosts.py): network
# namespaces need root with CAP_NET_ADMIN, ip and unshare; probed by making
# and removing one.
if "mpi" in config.available_features and os.geteuid() == 0 and \
        shutil.which("ip") and shutil.which("unshare"):
    probe = "mpprobe%d" % os.getpid()
    made = subprocess.run(["ip", "netns", "add", probe],
                          capture_output=True).returncode == 0
    if made:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
        config.available_features.add("netns")
if "mpi" in config.available_features and \
        "netns" not in config.available_features:
    lit_config.note("no network namespaces here: MPI over TCP between two "
                    "hosts is reported UNSUPPORTED")

# The ONNX importer (mp-import-onnx, mp-onnx-test): built (onnx-importer);
# ONNX's own backend tests from libonnx-testdata (onnx-testdata); a Python
# with the onnx package, to build test models with onnx.helper
# (onnx-python, as %onnx_python).
if config.mp_has_onnx:
    config.available_features.add("onnx-importer")
    testdata = "/usr/include/onnx/backend/test/data"
    if os.path.isdir(os.path.join(testdata, "node")):
        config.available_features.add("onnx-testdata")
        config.substitutions.append(("%onnx_testdata", testdata))
    else:
        lit_config.note("libonnx-testdata is not installed: the ONNX "
                        "conformance test is reported UNSUPPORTED")
    import shutil
    import subprocess
    onnx_python = None
    for candidate in [config.python_executable, "/usr/bin/python3",
                      shutil.which("python3")]:
        if not candidate or not os.path.exists(candidate):
            continue
        try:
            probe = subprocess.run([candidate, "-c", "import onnx, numpy"],
                                   capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            continue
        if probe.returncode == 0:
            onnx_python = candidate
            break
    if onnx_python:
        config.available_features.add("onnx-python")
        config.substitutions.append(("%onnx_python", onnx_python))
    else:
        lit_config.note("no Python with the onnx package (python3-onnx): "
                        "the tests that build ONNX models are UNSUPPORTED")
    # onnxruntime, for comparisons: in a virtual environment the tests make
    # (ort-compare.py) from PyPI, or already made by an earlier run.
    ort_venv = os.path.join(config.mp_obj_root, "test", "ort-venv")
    config.substitutions.append(("%ort_venv", ort_venv))
    ort_python = os.path.join(ort_venv, "bin", "python")
    have_ort = os.path.exists(ort_python) and subprocess.run(
        [ort_python, "-c", "import onnxruntime"],
        capture_output=True).returncode == 0
    if not have_ort and onnx_python:
        import socket
        try:
            socket.create_connection(("pypi.org", 443), timeout=5).close()
            have_ort = True
        except OSError:
            lit_config.note("PyPI cannot be reached: the onnxruntime "
                            "comparisons are reported UNSUPPORTED")
    if have_ort and onnx_python:
        config.available_features.add("onnxruntime")

# root: the tests that make device nodes (mknod) run as root only, and are
# reported UNSUPPORTED otherwise.
if hasattr(os, "geteuid") and os.geteuid() == 0:
    config.available_features.add("root")
else:
    lit_config.note("not root: the tests that make device nodes are "
                    "reported UNSUPPORTED")

# The relocatable distribution (utils/mp dist), where it has been built:
# mp-dist, with %mp_dist (the tarball) and %mp_version. bare-root: a bare
# Debian root can be made for it (debootstrap, as root, with Debian's mirror
# reachable).
import glob
import re
dists = sorted(glob.glob(os.path.join(config.mp_obj_root, "dist",
                                      "mp-*-linux-x86_64.tar.xz")))
if dists:
    config.available_features.add("mp-dist")
    config.substitutions.append(("%mp_dist", dists[-1]))
    config.substitutions.append(
        ("%mp_version", re.search(r"mp-([^/]*)-linux-x86_64\.tar\.xz$",
                                  dists[-1]).group(1)))
    probe = subprocess.run(
        [config.python_executable,
         os.path.join(config.test_source_root, "Dist", "check-bare-root.py"),
         "--probe"], capture_output=True, text=True, timeout=60)
    if probe.returncode == 0:
        config.available_features.add("bare-root")
    else:
        lit_config.note("no bare Debian root for the distribution (%s): "
                        "test/Dist/bare-root.test is reported UNSUPPORTED"
                        % probe.stdout.strip())
else:
    lit_config.note("no distribution built (utils/mp dist): the tests of "
                    "test/Dist are reported UNSUPPORTED")
