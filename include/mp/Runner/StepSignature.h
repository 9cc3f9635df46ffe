//===- StepSignature.h - a compiled step's calling convention ---*- C++ -*-===//
//
// What a training step looks like from outside once it is lowered: its
// arguments (parameters, state, the batch) with their runtime types,
// shapes, roles and initial values, its results, the destinations it
// writes, and the ops tg-check-numerics watches in it. Plain data: the
// datasets, the compiled step and the trainer all read it, and it depends
// on none of them.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNNER_STEPSIGNATURE_H
#define MP_RUNNER_STEPSIGNATURE_H

#include "mp/Dialect/TG/IR/TrainStep.h"
#include "mp/Runtime/MPRuntime.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mp::runner {

/// One op tg-check-numerics watches (an entry of `tg.numerics`).
struct CheckedOp {
  int64_t id = 0;
  std::string name, op, location, compute;
  bool gradient = false;
  std::vector<std::string> operandTypes, resultTypes, pin;
  /// Rows of `numerics.stats` (-1: an integer value, no statistics).
  std::vector<int64_t> operandRows, resultRows;
};

struct StepTensor {
  std::string name;
  mpElementType type;
  std::vector<int64_t> shape;
};

struct StepArgument : StepTensor {
  tg::ArgRole role;
  /// `tg.init`, if given: a dense elements attribute or a dense resource.
  mlir::ElementsAttr init;
  /// For a shadow (`tg.shadow_of`): the index of the parameter it holds
  /// rounded. The runner sets it from the parameter, never from a file.
  std::optional<unsigned> shadowOf;
};

struct StepResult : StepTensor {
  tg::StepResult::Kind kind;
  /// For updates: the argument index.
  std::optional<unsigned> updates;
};

/// The step's calling convention after lowering: the arguments, then one
/// destination per result that is not an update.
struct StepSignature {
  std::string entry;
  std::vector<StepArgument> arguments;
  std::vector<StepResult> results;
  std::vector<unsigned> destinations; // result indices, in argument order
  unsigned lossResult = 0;
  /// The forward pass alone, for evaluation: a function taking the step's
  /// arguments and a destination for the `logits` output (result
  /// `forwardResult` of the step), when the step has one.
  std::string forwardEntry;
  std::optional<unsigned> forwardResult;
  /// The ops tg-check-numerics watches, when it ran.
  std::vector<CheckedOp> checkedOps;
  /// A hash of the step as compiled (after mixed precision, layout and the
  /// numerics checks, without locations): the ranks of a data-parallel run
  /// compare it at start-up.
  uint64_t fingerprint = 0;
  /// The tg.all_reduce ops of the step (tg-data-parallel's buckets).
  unsigned allReduces = 0;
  /// The bytes those all-reduces send per step (each rank's contribution).
  int64_t allReduceBytes = 0;

  const CheckedOp *findCheckedOp(int64_t id) const;

  std::optional<unsigned> findArgument(llvm::StringRef name) const;
  std::optional<unsigned> findOutput(llvm::StringRef name) const;
};

} // namespace mp::runner

#endif // MP_RUNNER_STEPSIGNATURE_H
