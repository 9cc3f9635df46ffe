//===- GradCheckMain.h - the mp-grad-check driver ---------------*- C++ -*-===//
//
// mp-grad-check: checks the gradients tg-make-train-step derives for a
// forward function against finite differences in f64.
// The whole driver lives in the library (lib/Tools/mp-grad-check), so that the
// tool's main is one line and a tool linked against the distribution's
// shared library needs no MLIR symbol of its own.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_MPGRADCHECK_GRADCHECKMAIN_H
#define MP_TOOLS_MPGRADCHECK_GRADCHECKMAIN_H

namespace mp {

/// Parses the command line and runs mp-grad-check; returns the exit status.
int gradCheckMain(int argc, char **argv);

} // namespace mp

#endif // MP_TOOLS_MPGRADCHECK_GRADCHECKMAIN_H
