//===- Loading.h - reading a model ------------------------------*- C++ -*-===//
//
// A model is a module of tg: a training step, a forward function that
// tg-make-train-step differentiates, or an ONNX model imported into one.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNNER_LOADING_H
#define MP_RUNNER_LOADING_H

#include "mp/Target/ONNX/ImportONNX.h"

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

/// Whether `path` names an ONNX model (by its extension).
bool isOnnxFile(llvm::StringRef path);

/// Loads a model: a .onnx file is imported with `options` (in a build
/// without the ONNX importer, that is an error), anything else goes to
/// loadModule. Returns null after reporting the error.
mlir::OwningOpRef<mlir::ModuleOp>
loadModel(Session &session, llvm::StringRef path,
          const OnnxImportOptions &options);

} // namespace mp::runner

#endif // MP_RUNNER_LOADING_H
