//===- Passes.h - tg transformation passes ----------------------*- C++ -*-===//
//
// The mixed-precision passes of the tg dialect. Each pass has a generated
// options struct (`TGAutoMixedPrecisionOptions`) and a create function that
// takes it, so C++ users configure passes without strings:
//
//   mp::tg::TGAutoMixedPrecisionOptions options;
//   options.computeType = "bf16";
//   options.addDeny = {"tg.gelu"};
//   pm.addPass(mp::tg::createTGAutoMixedPrecision(options));
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_TG_TRANSFORMS_PASSES_H
#define MP_DIALECT_TG_TRANSFORMS_PASSES_H

#include "mp/Dialect/TG/IR/TGDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mp::tg {

#define GEN_PASS_DECL
#include "mp/Dialect/TG/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mp/Dialect/TG/Transforms/Passes.h.inc"

} // namespace mp::tg

#endif // MP_DIALECT_TG_TRANSFORMS_PASSES_H
