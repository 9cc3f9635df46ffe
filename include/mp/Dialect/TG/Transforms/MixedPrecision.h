//===- MixedPrecision.h - automatic mixed precision as a library -*- C++ -*-===//
//
// The AMP algorithm without a pass manager: colour one function from a
// PrecisionPolicy, rewrite it, and describe every decision. The pass
// (tg-auto-mixed-precision) is a thin driver over these functions, and
// embedders can call them directly. docs/MixedPrecision.md explains the
// algorithm.
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_TG_TRANSFORMS_MIXEDPRECISION_H
#define MP_DIALECT_TG_TRANSFORMS_MIXEDPRECISION_H

#include "mp/Dialect/TG/Transforms/PrecisionPolicy.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mp::tg {

/// What the pass decided for one op, and why.
struct OpDecision {
  std::string name;   // location name
  std::string opName; // e.g. tg.matmul
  std::string listClass; // allow, infer, clear, deny or "none"
  bool lowPrecision = false;
  std::string computeType; // after the rewrite; "none" for data movement
  std::vector<std::string> operandTypes, resultTypes; // element types
  std::string rule;
};

struct FunctionReport {
  std::string function;
  bool applied = true; // false when the target has no fast path
  std::vector<OpDecision> ops;
  int64_t lowPrecisionOps = 0;
  int64_t castsInserted = 0;
  /// Bytes of the results of the ops the pass reasoned about (the
  /// activations and gradients of the step): in the input, after the
  /// rewrite, and the part of the latter stored in the low type.
  int64_t activationBytesBefore = 0, activationBytesAfter = 0,
          activationBytesLow = 0;
  /// Bytes of the results of the casts the pass inserted.
  int64_t castBytes = 0;
};

/// Colours and rewrites `fn` according to `policy`, filling the totals of
/// `report` and, with `describeOps`, one OpDecision per op. Never fails on
/// valid IR: ops it cannot reason about are left alone.
void applyAutoMixedPrecision(mlir::FunctionOpInterface fn,
                             const PrecisionPolicy &policy,
                             FunctionReport &report, bool describeOps = true);

/// Writes the JSON precision report of a module.
void writePrecisionReport(llvm::raw_ostream &os,
                          const PrecisionPolicy &policy,
                          llvm::ArrayRef<FunctionReport> functions);

/// Writes `fn` as a Graphviz graph, ops coloured by storage precision.
void writePrecisionDot(llvm::raw_ostream &os,
                       llvm::ArrayRef<mlir::FunctionOpInterface> functions);

} // namespace mp::tg

#endif // MP_DIALECT_TG_TRANSFORMS_MIXEDPRECISION_H
