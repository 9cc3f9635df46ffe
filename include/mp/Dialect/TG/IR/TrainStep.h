//===- TrainStep.h - the training-step convention ---------------*- C++ -*-===//
//
// A training step is a function op carrying `tg.train_step`. Each argument
// has one role (`tg.param`, `tg.state`, `tg.input`, `tg.label`, each naming
// the value) and each result is the loss (`tg.loss`), the new value of a
// parameter or state argument (`tg.update = "<name>"`), or an extra output
// (`tg.output = "<name>"`). Every parameter and state argument is updated by
// exactly one result of its type, so a runtime can bind both to one buffer
// and update it in place step after step. docs/TrainingStep.md describes it.
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_TG_IR_TRAINSTEP_H
#define MP_DIALECT_TG_IR_TRAINSTEP_H

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

namespace mp::tg {

enum class ArgRole { Param, State, Input, Label };

/// The attribute name of an argument role (`tg.param`, ...).
llvm::StringRef stringifyArgRole(ArgRole role);

struct StepArgument {
  ArgRole role;
  llvm::StringRef name;
  /// Index of the result that updates this argument (param and state only).
  std::optional<unsigned> updatedBy;
  /// For a state argument with tg.shadow_of: the parameter's index.
  std::optional<unsigned> shadowOf;
};

struct StepResult {
  enum class Kind { Loss, Update, Output };
  Kind kind;
  /// The output name, or the name of the updated argument.
  llvm::StringRef name;
  /// For updates: the argument this result replaces.
  std::optional<unsigned> updates;
};

struct TrainStepSignature {
  llvm::SmallVector<StepArgument> arguments;
  llvm::SmallVector<StepResult> results;
  unsigned lossResult = 0;
};

/// Reads and checks the convention on `fn`. On failure, emits a diagnostic on
/// `fn` when `emitErrors` is set.
llvm::FailureOr<TrainStepSignature>
getTrainStepSignature(mlir::FunctionOpInterface fn, bool emitErrors = true);

/// Whether `fn` is marked as a training step.
bool isTrainStep(mlir::Operation *fn);

/// Whether `fn` is marked as a forward function (tg.forward).
bool isForward(mlir::Operation *fn);

/// A forward function: arguments with the roles of a training step, and
/// results that are the loss, outputs, new values of tg.state arguments, or
/// unmarked (the loss or the logits, as the differentiation pass is told).
struct ForwardSignature {
  llvm::SmallVector<StepArgument> arguments;
  /// One per result; kind Output for unmarked results, with an empty name.
  llvm::SmallVector<StepResult> results;
};

/// Reads and checks the forward convention on `fn`: one role per argument,
/// unique names, floating-point parameters, no empty dimensions, at most
/// one tg.loss, tg.update only of tg.state arguments (once each). On
/// failure, emits a diagnostic on `fn` when `emitErrors` is set.
llvm::FailureOr<ForwardSignature>
getForwardSignature(mlir::FunctionOpInterface fn, bool emitErrors = true);

} // namespace mp::tg

#endif // MP_DIALECT_TG_IR_TRAINSTEP_H
