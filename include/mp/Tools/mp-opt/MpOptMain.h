//===- MpOptMain.h - the mp-opt driver --------------------------*- C++ -*-===//
//
// mlir-opt's driver with mp's input guard in front of the parser.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_MPOPT_MPOPTMAIN_H
#define MP_TOOLS_MPOPT_MPOPTMAIN_H

#include "llvm/ADT/StringRef.h"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mp {

/// Parses the mlir-opt command line, reads the input, checks it with
/// checkInputNesting and runs MlirOptMain on it. Returns the exit code.
int optMain(int argc, char **argv, llvm::StringRef toolName,
            mlir::DialectRegistry &registry);

/// mp-opt: optMain with every mp dialect, interface and pass registered,
/// plus what `registerMore` adds (mp-opt's test interfaces, in builds with
/// the tests). The whole main lives in the library so that a tool linked
/// against the distribution's shared library needs no MLIR symbol itself.
int mpOptMain(int argc, char **argv,
              void (*registerMore)(mlir::DialectRegistry &) = nullptr);

} // namespace mp

#endif // MP_TOOLS_MPOPT_MPOPTMAIN_H
