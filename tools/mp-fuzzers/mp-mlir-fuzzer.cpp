//===- mp-mlir-fuzzer.cpp - .mlir through the whole pipeline --------------===//
//
// An input is a module, in text or bytecode. It goes where mp-opt and
// mp-runner take a user's file: the nesting guards, the parser, the
// verifier and, when it verifies, tg-raise-decomposed-ops (as an import
// does), tg-make-train-step (for a forward function without a step),
// mixed precision (f16, bf16, or bf16 changing the signature: chosen by the
// input's bytes so that a replay is the same), for every other input
// tg-fold-transposes, tg-fuse-epilogues and tg-shadow-weights, then
// tg-check-numerics and tg-lower-to-llvm, with the IR verified after every
// pass.
//
//===----------------------------------------------------------------------===//

#include "FuzzerSupport.h"

#include "mp/Dialect/TG/IR/TGDialect.h"
#include "mp/InitAll.h"
#include "mp/Tools/InputGuard.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using mp::fuzz::registry;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  mp::registerAllPasses();
  registry();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(bytes, "input.mlir");
  std::string guard;
  llvm::raw_string_ostream guardOs(guard);
  if (failed(mp::checkInputNesting(*buffer, guardOs)) ||
      failed(mp::checkBytecodeNesting(*buffer, registry(),
                                      /*allowUnregisteredDialects=*/false,
                                      guardOs))) {
    if (mp::fuzz::verbose())
      llvm::errs() << guard;
    return 0;
  }

  MLIRContext context(registry(), MLIRContext::Threading::DISABLED);
  mp::fuzz::silenceDiagnostics(context);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  ParserConfig config(&context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, config);
  if (!module || failed(verify(*module)))
    return 0;

  bool hasStep = false, hasForward = false;
  module->walk([&](func::FuncOp fn) {
    hasStep |= fn->hasAttr(mp::tg::TGDialect::kTrainStepAttr);
    hasForward |= fn->hasAttr(mp::tg::TGDialect::kForwardAttr);
  });
  if (!hasStep && !hasForward) {
    if (mp::fuzz::verbose())
      llvm::errs() << "no training step or forward function: parsed only\n";
    return 0;
  }
  uint32_t hash = 2166136261u;
  for (size_t k = 0; k < size; ++k)
    hash = (hash ^ data[k]) * 16777619u;
  // The input's bytes pick the variant: f16 or bf16 through the
  // tg-mixed-precision pipeline, or the AMP pass alone letting the
  // signature change (bf16, where loss scaling is none).
  // The passes of the module's pass manager (no anchor: one would nest).
  std::string pipeline = "tg-raise-decomposed-ops,";
  if (!hasStep)
    pipeline += "tg-make-train-step{optimizer=adamw},";
  switch (hash % 3) {
  case 0:
    pipeline += "tg-mixed-precision{compute-type=f16}";
    break;
  case 1:
    pipeline += "tg-mixed-precision{compute-type=bf16}";
    break;
  default:
    pipeline += "tg-auto-mixed-precision{compute-type=bf16 "
                "change-signature=true},canonicalize";
    break;
  }
  // Every other input, the transposes folded, the epilogues fused and the
  // weights shadowed as mp-runner does.
  if ((hash / 3) % 2)
    pipeline += ",tg-fold-transposes,tg-fuse-epilogues,tg-shadow-weights";
  pipeline += ",tg-check-numerics,tg-lower-to-llvm";

  mp::fuzz::runPipeline(*module, pipeline);
  return 0;
}
