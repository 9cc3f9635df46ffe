//===- ImportFlags.h - the tools' ONNX import options -----------*- C++ -*-===//
//
// mp-runner, mp-compile and mp-grad-check read a .onnx model as well as
// MLIR: it is imported (mp/Target/ONNX/ImportONNX.h) as it is loaded. These
// are the import's flags; the labels a model needs for training follow the
// loss asked for (--loss).
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_IMPORTFLAGS_H
#define MP_TOOLS_IMPORTFLAGS_H

#include "mp/Runner/Loading.h"
#include "mp/Target/ONNX/ImportONNX.h"

#include "llvm/Support/CommandLine.h"

namespace mp::tools {

struct ImportFlags {
  explicit ImportFlags(llvm::cl::OptionCategory &category);

  /// The import options for a model trained with `loss` (tg-make-train-step's
  /// loss= value, empty for auto): class labels for cross-entropy, targets
  /// for MSE, class labels when the model computes no loss itself.
  llvm::Expected<OnnxImportOptions> options(llvm::StringRef loss) const;

  llvm::cl::list<std::string> inputShape, freeze;
  llvm::cl::opt<int64_t> batchSize;
};

/// Loads a model as the tools do: runner::loadModel with the import
/// options of `flags` for a model trained with `loss`; import flags given
/// for an MLIR file are an error. Returns null after reporting the error.
mlir::OwningOpRef<mlir::ModuleOp> loadModel(runner::Session &session,
                                            llvm::StringRef path,
                                            const ImportFlags &flags,
                                            llvm::StringRef loss);

} // namespace mp::tools

#endif // MP_TOOLS_IMPORTFLAGS_H
