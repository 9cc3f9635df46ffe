//===- ImportFlags.h - the drivers' ONNX import options ---------*- C++ -*-===//
//
// mp-runner, mp-compile and mp-grad-check read a .onnx model as well as
// MLIR: it is imported (mp/Target/ONNX/ImportONNX.h) as it is loaded. These
// are the import's flags; the labels a model needs for training follow the
// loss asked for (--loss).
//
//===----------------------------------------------------------------------===//

#ifndef MP_LIB_RUNNER_IMPORTFLAGS_H
#define MP_LIB_RUNNER_IMPORTFLAGS_H

#include "mp/Target/ONNX/ImportONNX.h"

#include "llvm/Support/CommandLine.h"

namespace mp::runner {

struct ImportFlags {
  explicit ImportFlags(llvm::cl::OptionCategory &category);

  /// The import options for a model trained with `loss` (tg-make-train-step's
  /// loss= value, empty for auto): class labels for cross-entropy, targets
  /// for MSE, class labels when the model computes no loss itself.
  llvm::Expected<OnnxImportOptions> options(llvm::StringRef loss) const;

  llvm::cl::list<std::string> inputShape, freeze;
  llvm::cl::opt<int64_t> batchSize;
};

/// Whether `path` names an ONNX model (by its extension).
bool isOnnxFile(llvm::StringRef path);

} // namespace mp::runner

#endif // MP_LIB_RUNNER_IMPORTFLAGS_H
