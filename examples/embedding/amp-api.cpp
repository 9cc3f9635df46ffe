// amp-api: runs automatic mixed precision on a training step from C++,
// configured through the generated options struct, and prints the result.
#include "mp/Dialect/TG/Transforms/Passes.h"
#include "mp/InitAll.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

int main(int argc, char **argv) {
  if (argc != 3)
    return llvm::errs() << "usage: amp-api <step.mlir> <f16|bf16>\n", 2;
  mlir::DialectRegistry registry;
  mp::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  if (!module)
    return 1;
  mp::tg::TGAutoMixedPrecisionOptions options;
  options.computeType = argv[2];
  options.addDeny = {"tg.gelu"};
  mlir::PassManager pm(&context);
  pm.addPass(mp::tg::createTGAutoMixedPrecision(options));
  if (mlir::failed(pm.run(*module)))
    return 1;
  module->print(llvm::outs());
  return 0;
}
