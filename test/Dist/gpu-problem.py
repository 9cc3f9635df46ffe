"""Runs mp-gpu-check's device classification (parse_device_info and
gpu_problem, the functions its device stage calls) on `mp-runner
--device-info` outputs of machines this one is not: prints, per file,
what the GPU stages would do.

usage: gpu-problem.py <mp-gpu-check.py> <device-info.txt> [driver|no-driver] ...
"""

import importlib.util
import os
import sys

sys.dont_write_bytecode = True  # nothing written into the source tree
spec = importlib.util.spec_from_file_location("mp_gpu_check", sys.argv[1])
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)

args = sys.argv[2:]
for path, driver in zip(args[::2], args[1::2]):
    machine = check.Machine()
    info = open(path).read()
    check.parse_device_info(info, machine)
    problem = check.gpu_problem(info, machine, driver == "driver")
    print("%s: %s" % (os.path.basename(path),
                      "GPU stages skipped: " + problem if problem
                      else "GPU stages run on " + machine.gpu))
