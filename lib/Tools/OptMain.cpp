//===- OptMain.cpp - the mp-opt driver ------------------------------------===//
//
// What mlir::MlirOptMain(argc, argv, ...) does, with the input read by us so
// that the nesting guard sees it (stdin can be read only once).
//
//===----------------------------------------------------------------------===//

#include "mp/Tools/OptMain.h"

#include "mp/Tools/InputGuard.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

int mp::optMain(int argc, char **argv, llvm::StringRef toolName,
                DialectRegistry &registry) {
  llvm::InitLLVM initLLVM(argc, argv);
  auto [inputFilename, outputFilename] =
      registerAndParseCLIOptions(argc, argv, toolName, registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects()) {
    llvm::outs() << "Available Dialects: ";
    llvm::interleave(registry.getDialectNames(), llvm::outs(), ",");
    llvm::outs() << "\n";
    return EXIT_SUCCESS;
  }
  if (config.shouldListPasses()) {
    printRegisteredPasses();
    return EXIT_SUCCESS;
  }

  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &errorMessage);
  if (!input) {
    llvm::errs() << "error: " << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  if (failed(checkInputNesting(*input, llvm::errs())))
    return EXIT_FAILURE;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << "error: " << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}
