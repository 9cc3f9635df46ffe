//===- mp-opt.cpp - the mp optimizer driver -------------------------------===//
//
// An mlir-opt style driver with the tg dialect, the upstream dialects mp
// uses, and every mp pass and pipeline.
//
//===----------------------------------------------------------------------===//

#include "mp/InitAll.h"
#include "mp/Tools/OptMain.h"

#include "mlir/IR/DialectRegistry.h"

#ifdef MP_INCLUDE_TESTS
namespace mp::test {
void registerTestPrecisionInterface(mlir::DialectRegistry &registry);
void registerTestDifferentiableInterface(mlir::DialectRegistry &registry);
} // namespace mp::test
#endif

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mp::registerAllDialects(registry);
  mp::registerAllPasses();
#ifdef MP_INCLUDE_TESTS
  mp::test::registerTestPrecisionInterface(registry);
  mp::test::registerTestDifferentiableInterface(registry);
#endif
  return mp::optMain(argc, argv, "mp optimizer driver\n", registry);
}
