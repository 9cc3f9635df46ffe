//===- InitAll.h - registration of everything mp provides -------*- C++ -*-===//
//
// The one registration entry point used by mp-opt, mp-runner and embedders:
// the tg dialect with the upstream dialects the pipeline uses, and every
// pass, mp's and the upstream ones the pipelines name.
//
//===----------------------------------------------------------------------===//

#ifndef MP_INITALL_H
#define MP_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mp {

/// Adds the tg dialect and the upstream dialects mp's pipelines produce.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers mp's passes and pipelines and the upstream passes they use, so
/// that they can be named on a command line or in a pass pipeline string.
void registerAllPasses();

} // namespace mp

#endif // MP_INITALL_H
