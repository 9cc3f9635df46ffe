//===- RunnerMain.h - the mp-runner driver ----------------------*- C++ -*-===//
//
// mp-runner: compiles a tg training step (or a forward function it
// differentiates, or an ONNX model it imports) for the CPU or CUDA backend,
// JIT-compiles it and trains a model (docs/Runtime.md).
// The whole driver lives in the library (lib/Tools/mp-runner), so that the
// tool's main is one line and a tool linked against the distribution's
// shared library needs no MLIR symbol of its own.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_MPRUNNER_RUNNERMAIN_H
#define MP_TOOLS_MPRUNNER_RUNNERMAIN_H

namespace mp {

/// Parses the command line and runs mp-runner; returns the exit status.
int runnerMain(int argc, char **argv);

} // namespace mp

#endif // MP_TOOLS_MPRUNNER_RUNNERMAIN_H
