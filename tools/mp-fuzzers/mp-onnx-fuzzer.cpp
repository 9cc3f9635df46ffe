//===- mp-onnx-fuzzer.cpp - the ONNX importer on untrusted protobuf -------===//
//
// An input is the bytes of a .onnx file, imported as mp-import-onnx and
// mp-runner import a model downloaded from the internet: labels added for
// training, a batch size for symbolic dimensions. The file lies alone in the
// process's private directory, so external data can name only it (or
// nothing). An imported module must verify.
//
//===----------------------------------------------------------------------===//

#include "FuzzerSupport.h"

#include "mp/InitAll.h"
#include "mp/Target/ONNX/ImportONNX.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using mp::fuzz::registry;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  registry();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = mp::fuzz::writeInput(data, size, "model.onnx");
  MLIRContext context(registry(), MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  mp::fuzz::silenceDiagnostics(context);
  mp::OnnxImportOptions options;
  options.batchSize = 2;
  options.labels = "auto";
  OwningOpRef<ModuleOp> module = mp::importOnnxModel(path, &context, options);
  if (module && failed(verify(*module)))
    mp::fuzz::reportBug("the importer returned a module that does not verify");
  if (mp::fuzz::verbose())
    llvm::errs() << (module ? "imported\n" : "refused\n");
  return 0;
}
