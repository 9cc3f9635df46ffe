//===- Loading.h - reading a step for the drivers ---------------*- C++ -*-===//

#ifndef MP_LIB_RUNNER_LOADING_H
#define MP_LIB_RUNNER_LOADING_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

namespace mp::runner {

/// A context with every mp dialect, and a diagnostic handler that prints
/// errors with their source locations.
struct Session {
  Session();
  ~Session();
  mlir::MLIRContext context;
  llvm::SourceMgr sourceMgr;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> handler;
};

/// Parses `path` (text or bytecode) after the input guards; ops named by a
/// bare loc("name") keep their file position as the name's child.
mlir::OwningOpRef<mlir::ModuleOp> loadModule(Session &session,
                                             llvm::StringRef path);

} // namespace mp::runner

#endif // MP_LIB_RUNNER_LOADING_H
