//===- InitAll.cpp - registration of everything mp provides ---------------===//

#include "mp/InitAll.h"

#include "mp/Dialect/TG/IR/TGDialect.h"
#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void mp::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mp::tg::TGDialect, mlir::func::FuncDialect>();
}

void mp::registerAllPasses() {
  mp::tg::registerTGPasses();
  mp::tg::registerTGMixedPrecisionPipeline();
  // Upstream passes the mixed-precision pipelines are built from.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::registerInlinerPass();
}
