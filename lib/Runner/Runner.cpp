//===- Runner.cpp - train a tg model from C++ -----------------------------===//

#include "mp/Runner/Runner.h"

using namespace mlir;
using namespace mp;
using namespace mp::runner;

char DiagnosedError::ID = 0;

void DiagnosedError::log(llvm::raw_ostream &os) const {
  os << "the IR has errors (reported above)";
}

std::error_code DiagnosedError::convertToErrorCode() const {
  return std::make_error_code(std::errc::invalid_argument);
}

llvm::Expected<std::unique_ptr<Trainer>>
runner::compileTrainer(ModuleOp module, const CompileOptions &options,
                       std::string label) {
  FailureOr<StepSignature> sig =
      lowerStep(module, options.entry, options.amp, options.numerics,
                options.progress, options.layout, options.parallel,
                options.fusion);
  if (failed(sig))
    return llvm::make_error<DiagnosedError>();
  if (options.numerics.enabled && sig->checkedOps.empty())
    return llvm::createStringError(
        std::errc::invalid_argument,
        "tg-check-numerics watches no op of '%s' (see the warning above)",
        sig->entry.c_str());
  llvm::Expected<std::unique_ptr<CompiledStep>> compiled =
      CompiledStep::create(module, std::move(*sig), options.optLevel,
                           options.backend == Backend::CUDA, options.progress);
  if (!compiled)
    return compiled.takeError();
  return Trainer::create(std::move(label), std::move(*compiled),
                         options.backend, options.cudaGraphs);
}
