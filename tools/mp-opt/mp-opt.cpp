//===- mp-opt.cpp - the mp optimizer driver -------------------------------===//
//
// An mlir-opt style driver with the tg dialect, the upstream dialects mp
// uses, and every mp pass and pipeline.
//
//===----------------------------------------------------------------------===//

#include "mp/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mp::registerAllDialects(registry);
  mp::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "mp optimizer driver\n", registry));
}
