//===- ImportFlags.cpp - the tools' ONNX import options -------------------===//

#include "mp/Tools/ImportFlags.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mp;
using namespace mp::tools;
namespace cl = llvm::cl;

ImportFlags::ImportFlags(cl::OptionCategory &category)
    : inputShape("input-shape",
                 cl::desc("For an ONNX model: the shape of an input with "
                          "symbolic dimensions, <name>=<d0>x<d1>... "
                          "(repeatable)"),
                 cl::cat(category)),
      freeze("freeze",
             cl::desc("For an ONNX model: globs of initializers to keep "
                      "constant instead of training (comma-separated)"),
             cl::CommaSeparated, cl::cat(category)),
      batchSize("batch-size",
                cl::desc("For an ONNX model: the size of every input's "
                         "symbolic first dimension"),
                cl::init(0), cl::cat(category)) {}

llvm::Expected<OnnxImportOptions>
ImportFlags::options(llvm::StringRef loss) const {
  OnnxImportOptions out;
#ifdef MP_HAS_ONNX
  for (const std::string &spec : inputShape)
    if (llvm::Error err = parseInputShape(spec, out))
      return std::move(err);
#endif
  out.freeze.assign(freeze.begin(), freeze.end());
  if (batchSize < 0)
    return llvm::createStringError(std::errc::invalid_argument,
                                   "--batch-size must be positive");
  out.batchSize = batchSize;
  out.labels = loss == "softmax-cross-entropy" ? "classes"
               : loss == "mse"                 ? "targets"
               : loss == "none"                ? "none"
                                               : "auto";
  return out;
}

OwningOpRef<ModuleOp> mp::tools::loadModel(runner::Session &session,
                                           llvm::StringRef path,
                                           const ImportFlags &flags,
                                           llvm::StringRef loss) {
  if (!runner::isOnnxFile(path)) {
    if (!flags.inputShape.empty() || !flags.freeze.empty() ||
        flags.batchSize.getNumOccurrences()) {
      llvm::errs() << "error: --input-shape, --batch-size and --freeze are "
                      "for ONNX models; '"
                   << path << "' is MLIR\n";
      return nullptr;
    }
    return runner::loadModule(session, path);
  }
  llvm::Expected<OnnxImportOptions> options = flags.options(loss);
  if (!options) {
    llvm::errs() << "error: " << llvm::toString(options.takeError()) << "\n";
    return nullptr;
  }
  return runner::loadModel(session, path, *options);
}
