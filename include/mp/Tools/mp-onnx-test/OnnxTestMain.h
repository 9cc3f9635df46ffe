//===- OnnxTestMain.h - the mp-onnx-test driver -----------------*- C++ -*-===//
//
// mp-onnx-test: runs ONNX's backend node tests through the importer and the
// CPU backend (builds with the ONNX importer).
// The whole driver lives in the library (lib/Tools/mp-onnx-test), so that the
// tool's main is one line and a tool linked against the distribution's
// shared library needs no MLIR symbol of its own.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_MPONNXTEST_ONNXTESTMAIN_H
#define MP_TOOLS_MPONNXTEST_ONNXTESTMAIN_H

namespace mp {

/// Parses the command line and runs mp-onnx-test; returns the exit status.
int onnxTestMain(int argc, char **argv);

} // namespace mp

#endif // MP_TOOLS_MPONNXTEST_ONNXTESTMAIN_H
