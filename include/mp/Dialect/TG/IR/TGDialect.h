//===- TGDialect.h - the tg dialect -----------------------------*- C++ -*-===//
//
// The training-graph dialect. See TGBase.td for its description.
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_TG_IR_TGDIALECT_H
#define MP_DIALECT_TG_IR_TGDIALECT_H

#include "mlir/IR/Dialect.h"

#include "mp/Dialect/TG/IR/TGOpsDialect.h.inc"

#endif // MP_DIALECT_TG_IR_TGDIALECT_H
