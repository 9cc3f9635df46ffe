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

struct ImportFlags;

/// Loads a model: a .onnx file is imported with `flags` (its labels
/// following the loss `loss`, tg-make-train-step's loss= value), anything
/// else goes to loadModule.
mlir::OwningOpRef<mlir::ModuleOp> loadModel(Session &session,
                                            llvm::StringRef path,
                                            const ImportFlags &flags,
                                            llvm::StringRef loss);

} // namespace mp::runner

#endif // MP_LIB_RUNNER_LOADING_H
