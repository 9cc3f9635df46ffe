//===- Runner.h - the mp-runner and mp-compile drivers ----------*- C++ -*-===//
//
// Entry points of the tools, so that their mains stay a line long:
//   mp-runner   compiles a tg training step (mixed-precision pipeline, then
//               tg-lower-to-llvm), JIT-compiles it and trains a model;
//   mp-compile  compiles a step ahead of time to an object file and a C
//               header that an application links with the mp runtime;
//   mp-grad-check  checks the gradients tg-make-train-step derives for a
//               forward function against finite differences;
//   mp-import-onnx  imports an ONNX model as a tg forward function (builds
//               with the ONNX importer).
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNNER_RUNNER_H
#define MP_RUNNER_RUNNER_H

namespace mp {

int runnerMain(int argc, char **argv);

int compileMain(int argc, char **argv);

int gradCheckMain(int argc, char **argv);

int importOnnxMain(int argc, char **argv);

int onnxTestMain(int argc, char **argv);

} // namespace mp

#endif // MP_RUNNER_RUNNER_H
