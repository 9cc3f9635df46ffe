//===- MPPlugin.cpp - mp as a plugin of a stock mlir-opt ------------------===//
//
// One shared library that is both a dialect plugin (the tg dialect) and a
// pass plugin (every mp pass and pipeline: tg-auto-mixed-precision,
// tg-insert-loss-scaling, tg-mixed-precision, convert-tg-to-runtime and
// tg-lower-to-llvm):
//
//   mlir-opt --load-dialect-plugin=lib/MPPlugin.so \
//            --load-pass-plugin=lib/MPPlugin.so step.mlir \
//            --pass-pipeline="builtin.module(tg-auto-mixed-precision)"
//
// It links against libMLIR.so, the library Debian's mlir-opt uses, so that
// both share one copy of MLIR.
//
//===----------------------------------------------------------------------===//

#include "mp/Conversion/Passes.h"
#include "mp/Dialect/TG/IR/TGDialect.h"
#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "MPDialects", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            registry->insert<mp::tg::TGDialect>();
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "MPPasses", LLVM_VERSION_STRING,
          []() {
            mp::tg::registerTGPasses();
            mp::tg::registerTGMixedPrecisionPipeline();
            mp::registerMPConversionPasses();
            mp::registerTGLowerToLLVMPipeline();
          }};
}
