//===- CompileMain.h - the mp-compile driver --------------------*- C++ -*-===//
//
// mp-compile: compiles a training step ahead of time to an object file and
// a C header that an application links with the mp runtime.
// The whole driver lives in the library (lib/Tools/mp-compile), so that the
// tool's main is one line and a tool linked against the distribution's
// shared library needs no MLIR symbol of its own.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_MPCOMPILE_COMPILEMAIN_H
#define MP_TOOLS_MPCOMPILE_COMPILEMAIN_H

namespace mp {

/// Parses the command line and runs mp-compile; returns the exit status.
int compileMain(int argc, char **argv);

} // namespace mp

#endif // MP_TOOLS_MPCOMPILE_COMPILEMAIN_H
