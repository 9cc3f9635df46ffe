//===- InitAll.cpp - registration of everything mp provides ---------------===//

#include "mp/InitAll.h"

#include "mp/Conversion/Passes.h"
#include "mp/Dialect/TG/IR/TGDialect.h"
#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void mp::registerAllDialects(mlir::DialectRegistry &registry) {
  // The dialects of lowered steps, so that every stage can be printed and
  // read back.
  registry.insert<mp::tg::TGDialect, mlir::arith::ArithDialect,
                  mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
                  mlir::LLVM::LLVMDialect,
                  mlir::memref::MemRefDialect>();
}

void mp::registerAllPasses() {
  mp::tg::registerTGPasses();
  mp::tg::registerTGMixedPrecisionPipeline();
  mp::registerMPConversionPasses();
  mp::registerTGLowerToLLVMPipeline();
  // Upstream passes the mixed-precision pipelines are built from.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::registerInlinerPass();
}
