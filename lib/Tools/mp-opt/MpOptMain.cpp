//===- MpOptMain.cpp - the mp-opt driver ----------------------------------===//
//
// What mlir::MlirOptMain(argc, argv, ...) does, with the input read by us so
// that the nesting guards see it (stdin can be read only once), and the
// output written through a temporary file renamed into place, so that a
// full disk is an error and never leaves half a file.
//
//===----------------------------------------------------------------------===//

#include "mp/Tools/mp-opt/MpOptMain.h"

#include "mp/InitAll.h"
#include "mp/Support/FileOutput.h"
#include "mp/Tools/InputGuard.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"

using namespace mlir;

int mp::optMain(int argc, char **argv, llvm::StringRef toolName,
                DialectRegistry &registry) {
  llvm::InitLLVM initLLVM(argc, argv);
  reportFileSizeLimitAsError();
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
  if (failed(checkInputNesting(*input, llvm::errs())) ||
      failed(checkBytecodeNesting(*input, registry,
                                  config.shouldAllowUnregisteredDialects(),
                                  llvm::errs())))
    return EXIT_FAILURE;
  llvm::Expected<std::unique_ptr<AtomicFile>> output =
      AtomicFile::create(outputFilename);
  if (!output) {
    llvm::errs() << "error: " << llvm::toString(output.takeError()) << "\n";
    return EXIT_FAILURE;
  }
  if (failed(MlirOptMain((*output)->os(), std::move(input), registry, config)))
    return EXIT_FAILURE;
  if (llvm::Error err = (*output)->commit()) {
    llvm::errs() << "error: " << llvm::toString(std::move(err)) << "\n";
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}

int mp::mpOptMain(int argc, char **argv,
                  void (*registerMore)(DialectRegistry &)) {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllPasses();
  if (registerMore)
    registerMore(registry);
  return optMain(argc, argv, "mp optimizer driver\n", registry);
}
