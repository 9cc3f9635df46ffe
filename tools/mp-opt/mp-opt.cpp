//===- mp-opt.cpp - the mp optimizer driver -------------------------------===//
//
// An mlir-opt style driver with the tg dialect, the upstream dialects mp
// uses, and every mp pass and pipeline (mp::mpOptMain), plus the test
// interfaces in builds with the tests.
//
//===----------------------------------------------------------------------===//

#include "mp/Tools/mp-opt/MpOptMain.h"

#ifdef MP_INCLUDE_TESTS
#include "mlir/IR/DialectRegistry.h"

namespace mp::test {
void registerTestPrecisionInterface(mlir::DialectRegistry &registry);
void registerTestDifferentiableInterface(mlir::DialectRegistry &registry);
} // namespace mp::test

static void registerTestInterfaces(mlir::DialectRegistry &registry) {
  mp::test::registerTestPrecisionInterface(registry);
  mp::test::registerTestDifferentiableInterface(registry);
}
#endif

int main(int argc, char **argv) {
#ifdef MP_INCLUDE_TESTS
  return mp::mpOptMain(argc, argv, registerTestInterfaces);
#else
  return mp::mpOptMain(argc, argv);
#endif
}
