//===- ImportOnnxMain.h - the mp-import-onnx driver -------------*- C++ -*-===//
//
// mp-import-onnx: imports an ONNX model as a tg forward function, its
// weights in the IR or in a safetensors file beside it (builds with the
// ONNX importer).
// The whole driver lives in the library (lib/Tools/mp-import-onnx), so that the
// tool's main is one line and a tool linked against the distribution's
// shared library needs no MLIR symbol of its own.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_MPIMPORTONNX_IMPORTONNXMAIN_H
#define MP_TOOLS_MPIMPORTONNX_IMPORTONNXMAIN_H

namespace mp {

/// Parses the command line and runs mp-import-onnx; returns the exit status.
int importOnnxMain(int argc, char **argv);

} // namespace mp

#endif // MP_TOOLS_MPIMPORTONNX_IMPORTONNXMAIN_H
