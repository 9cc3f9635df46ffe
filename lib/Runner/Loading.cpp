//===- Loading.cpp - reading a step for the drivers -----------------------===//

#include "Loading.h"

#include "mp/InitAll.h"
#include "mp/Tools/InputGuard.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"

using namespace mlir;
using namespace mp::runner;

Session::Session() {
  DialectRegistry registry;
  mp::registerAllDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  handler = std::make_unique<SourceMgrDiagnosticHandler>(sourceMgr, &context);
}

Session::~Session() = default;

OwningOpRef<ModuleOp> mp::runner::loadModule(Session &session,
                                             llvm::StringRef path) {
  auto file = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false);
  if (!file) {
    llvm::errs() << "error: cannot read '" << path
                 << "': " << file.getError().message() << "\n";
    return nullptr;
  }
  if (failed(mp::checkInputNesting((*file)->getMemBufferRef(), llvm::errs())) ||
      failed(mp::checkBytecodeNesting((*file)->getMemBufferRef(),
                                      session.context.getDialectRegistry(),
                                      /*allowUnregisteredDialects=*/false,
                                      llvm::errs())))
    return nullptr;
  session.sourceMgr.AddNewSourceBuffer(std::move(*file), llvm::SMLoc());
  return parseSourceFile<ModuleOp>(session.sourceMgr, &session.context);
}
