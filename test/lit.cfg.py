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

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

# `not`, `count` and FileCheck come from the LLVM tools directory.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.mp_tools_dir, append_path=True)

tool_dirs = [config.mp_tools_dir, config.llvm_tools_dir]
tools = ["mp-opt", "mlir-opt", "mp-runtime-tests", "mp-runner", "mp-compile"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# The mlir-opt plugin exists where a shared libMLIR was found.
if os.path.exists(os.path.join(config.mp_obj_root, "lib", "MPPlugin.so")):
    config.available_features.add("mlir-opt-plugin")
