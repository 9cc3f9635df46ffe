// tg-census: counts the ops of a training step by their default AMP list.
// A ten-line example of a tool that embeds mp through find_package(MP).
#include "mp/Dialect/TG/IR/TGOps.h"
#include "mp/InitAll.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

int main(int argc, char **argv) {
  if (argc != 2)
    return llvm::errs() << "usage: tg-census <step.mlir>\n", 2;
  mlir::DialectRegistry registry;
  mp::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  if (!module)
    return 1;
  std::map<std::string, int> counts;
  module->walk([&](mp::tg::PrecisionOpInterface op) {
    ++counts[mp::tg::stringifyPrecisionClass(op.getDefaultPrecisionClass()).str()];
  });
  for (auto &[list, count] : counts)
    llvm::outs() << list << ": " << count << "\n";
  return 0;
}
