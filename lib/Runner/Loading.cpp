//===- Loading.cpp - reading a step for the drivers -----------------------===//
//
// Input goes through the nesting guards first (mp/Tools/InputGuard.h). Text
// is parsed with the parser's record of op positions: an op carrying only a
// name (`loc("fc1.matmul")`, as frontends and the generator write) gets its
// file position as the name's child, so diagnostics show both.
//
//===----------------------------------------------------------------------===//

#include "mp/Runner/Loading.h"

#include "mp/InitAll.h"
#include "mp/Tools/InputGuard.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/AsmParser/AsmParserState.h"
#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mp::runner;

Session::Session() {
  DialectRegistry registry;
  mp::registerAllDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  // Diagnostics point at the op's location; a dump of the op (a whole
  // function, for a function's error) would bury them.
  context.printOpOnDiagnostic(false);
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
      failed(mp::checkBytecodeNesting(
          (*file)->getMemBufferRef(), session.context.getDialectRegistry(),
          /*allowUnregisteredDialects=*/false, llvm::errs())))
    return nullptr;
  bool bytecode = isBytecode((*file)->getMemBufferRef());
  session.sourceMgr.AddNewSourceBuffer(std::move(*file), llvm::SMLoc());
  if (bytecode)
    return parseSourceFile<ModuleOp>(session.sourceMgr, &session.context);

  // Text: parse with the parser's record of where each op is, so that ops
  // named by a bare loc("name") keep their file position too.
  MLIRContext *ctx = &session.context;
  Block block;
  AsmParserState state;
  ParserConfig config(ctx, /*verifyAfterParse=*/false);
  if (failed(parseAsmSourceFile(session.sourceMgr, &block, config, &state)))
    return nullptr;
  StringRef bufferName =
      session.sourceMgr.getMemoryBuffer(1)->getBufferIdentifier();
  for (const AsmParserState::OperationDefinition &def : state.getOpDefs()) {
    auto name = dyn_cast<NameLoc>(def.op->getLoc());
    if (!name || !isa<UnknownLoc>(name.getChildLoc()))
      continue;
    auto [line, column] = session.sourceMgr.getLineAndColumn(def.loc.Start);
    def.op->setLoc(NameLoc::get(
        name.getName(), FileLineColLoc::get(ctx, bufferName, line, column)));
  }
  OwningOpRef<ModuleOp> module =
      mlir::detail::constructContainerOpForParserIfNecessary<ModuleOp>(
          &block, ctx, FileLineColLoc::get(ctx, bufferName, 0, 0));
  if (!module || failed(verify(*module)))
    return nullptr;
  return module;
}

bool mp::runner::isOnnxFile(llvm::StringRef path) {
  return llvm::sys::path::extension(path).equals_insensitive(".onnx");
}

OwningOpRef<ModuleOp>
mp::runner::loadModel(Session &session, llvm::StringRef path,
                      const OnnxImportOptions &options) {
  if (!isOnnxFile(path))
    return loadModule(session, path);
#ifdef MP_HAS_ONNX
  return importOnnxModel(path, &session.context, options);
#else
  (void)options;
  llvm::errs() << "error: '" << path
               << "' is an ONNX model, and this mp was built without the "
                  "ONNX importer (configure with libonnx-dev installed)\n";
  return nullptr;
#endif
}
