//===- LowerToLLVM.cpp - the tg-lower-to-llvm pipeline --------------------===//
//
// From a tg step (after the mixed-precision passes, if any) to the LLVM
// dialect: buffers and runtime calls, then upstream's lowerings. memref
// allocations go through MLIR's generic allocation functions, which the mp
// runtime implements as a caching allocator; function boundaries use bare
// pointers, so a compiled step is `void step(void *arg0, void *arg1, ...)`
// with one pointer per tensor.
//
//===----------------------------------------------------------------------===//

#include "mp/Conversion/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void mp::buildTGLowerToLLVMPipeline(OpPassManager &pm) {
  pm.addPass(createConvertTGToRuntime());
  FinalizeMemRefToLLVMConversionPassOptions memref;
  memref.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memref));
  pm.addPass(createArithToLLVMConversionPass());
  ConvertFuncToLLVMPassOptions func;
  func.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(func));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mp::registerTGLowerToLLVMPipeline() {
  PassPipelineRegistration<>(
      "tg-lower-to-llvm",
      "Lower a tg step to the LLVM dialect calling the mp runtime",
      [](OpPassManager &pm) { buildTGLowerToLLVMPipeline(pm); });
}
