//===- TrainStep.cpp - the training-step convention -----------------------===//
//
// Reads the role attributes of a training-step function and checks that
// they form a step a runtime can run repeatedly in place: every argument has
// one role, a unique name and no empty dimension, one result is the scalar
// loss, and every
// parameter and state argument is updated by exactly one result of its type.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/IR/TrainStep.h"

#include "mp/Dialect/TG/IR/TGDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mp::tg;

StringRef mp::tg::stringifyArgRole(ArgRole role) {
  switch (role) {
  case ArgRole::Param:
    return TGDialect::kParamAttr;
  case ArgRole::State:
    return TGDialect::kStateAttr;
  case ArgRole::Input:
    return TGDialect::kInputAttr;
  case ArgRole::Label:
    return TGDialect::kLabelAttr;
  }
  llvm_unreachable("unknown argument role");
}

bool mp::tg::isTrainStep(Operation *fn) {
  return fn->hasAttr(TGDialect::kTrainStepAttr);
}

bool mp::tg::isForward(Operation *fn) {
  return fn->hasAttr(TGDialect::kForwardAttr);
}

/// Reads the argument roles of a training step or forward function into
/// `arguments` (and their index by name into `argByName`).
static LogicalResult
readArguments(FunctionOpInterface fn,
              function_ref<LogicalResult(const Twine &)> fail,
              SmallVectorImpl<StepArgument> &arguments,
              llvm::StringMap<unsigned> &argByName) {
  static constexpr ArgRole kRoles[] = {ArgRole::Param, ArgRole::State,
                                       ArgRole::Input, ArgRole::Label};
  ArrayRef<Type> argTypes = fn.getArgumentTypes();
  for (unsigned i = 0, e = argTypes.size(); i < e; ++i) {
    std::optional<StepArgument> arg;
    for (ArgRole role : kRoles) {
      auto name = fn.getArgAttrOfType<StringAttr>(i, stringifyArgRole(role));
      if (!name)
        continue;
      if (arg)
        return fail("argument #" + Twine(i) + " has more than one role");
      arg = StepArgument{role, name.getValue(), std::nullopt, std::nullopt};
    }
    if (arg && fn.getArgAttr(i, TGDialect::kInitAttr) &&
        arg->role != ArgRole::State && arg->role != ArgRole::Param)
      return fail("argument #" + Twine(i) +
                  " has tg.init, which only tg.param and tg.state arguments "
                  "may have");
    if (!arg)
      return fail("argument #" + Twine(i) +
                  " has no role; give it one of tg.param, tg.state, "
                  "tg.input or tg.label");
    auto tensor = dyn_cast<RankedTensorType>(argTypes[i]);
    if (!tensor || !tensor.hasStaticShape())
      return fail("argument #" + Twine(i) + " ('" + arg->name +
                  "') must be a tensor of static shape");
    // An empty batch makes the loss 0/0 and an empty parameter trains
    // nothing: both are mistakes, caught here rather than in a runtime.
    if (llvm::is_contained(tensor.getShape(), 0))
      return fail("argument #" + Twine(i) + " ('" + arg->name +
                  "') has a dimension of size 0; every input, label, "
                  "parameter and state must hold at least one element");
    if (arg->role == ArgRole::Param &&
        !isa<FloatType>(tensor.getElementType()))
      return fail("parameter '" + arg->name +
                  "' must have a floating-point element type");
    auto [it, inserted] = argByName.try_emplace(arg->name, i);
    if (!inserted)
      return fail("argument #" + Twine(i) + " reuses the name '" + arg->name +
                  "' of argument #" + Twine(it->second));
    arguments.push_back(*arg);
  }
  // A shadow holds a parameter rounded to f16 or bf16 (tg-shadow-weights).
  for (unsigned i = 0, e = argTypes.size(); i < e; ++i) {
    auto of = fn.getArgAttrOfType<StringAttr>(i, TGDialect::kShadowOfAttr);
    if (!of)
      continue;
    StepArgument &arg = arguments[i];
    auto it = argByName.find(of.getValue());
    if (arg.role != ArgRole::State)
      return fail("argument #" + Twine(i) +
                  " has tg.shadow_of, which only tg.state arguments may have");
    if (it == argByName.end() || arguments[it->second].role != ArgRole::Param)
      return fail("'" + arg.name + "' is a shadow of '" + of.getValue() +
                  "', which is not a tg.param argument");
    auto shadow = cast<RankedTensorType>(argTypes[i]);
    auto param = cast<RankedTensorType>(argTypes[it->second]);
    if (shadow.getShape() != param.getShape() ||
        !param.getElementType().isF32() ||
        !isa<BFloat16Type, Float16Type>(shadow.getElementType()))
      return fail("shadow '" + arg.name + "' of '" + of.getValue() +
                  "' must have the parameter's shape and f16 or bf16 "
                  "elements, and the parameter f32 elements");
    if (fn.getArgAttr(i, TGDialect::kInitAttr))
      return fail("'" + arg.name +
                  "' has tg.init, but a shadow's value is its parameter's");
    arg.shadowOf = it->second;
  }
  return success();
}

FailureOr<TrainStepSignature>
mp::tg::getTrainStepSignature(FunctionOpInterface fn, bool emitErrors) {
  auto fail = [&](const Twine &message) -> LogicalResult {
    if (emitErrors)
      fn->emitOpError() << "is not a valid training step: " << message;
    return failure();
  };
  TrainStepSignature sig;
  llvm::StringMap<unsigned> argByName;
  ArrayRef<Type> argTypes = fn.getArgumentTypes();
  if (failed(readArguments(fn, fail, sig.arguments, argByName)))
    return failure();

  ArrayRef<Type> resultTypes = fn.getResultTypes();
  std::optional<unsigned> loss;
  for (unsigned i = 0, e = resultTypes.size(); i < e; ++i) {
    bool isLoss = static_cast<bool>(fn.getResultAttr(i, TGDialect::kLossAttr));
    auto update = fn.getResultAttrOfType<StringAttr>(i, TGDialect::kUpdateAttr);
    auto output = fn.getResultAttrOfType<StringAttr>(i, TGDialect::kOutputAttr);
    int kinds = int(isLoss) + int(bool(update)) + int(bool(output));
    if (kinds != 1)
      return fail("result #" + Twine(i) +
                  " needs exactly one of tg.loss, tg.update or tg.output");
    if (isLoss) {
      if (loss)
        return fail("results #" + Twine(*loss) + " and #" + Twine(i) +
                    " are both marked tg.loss");
      auto tensor = dyn_cast<RankedTensorType>(resultTypes[i]);
      if (!tensor || tensor.getRank() != 0 ||
          !isa<FloatType>(tensor.getElementType()))
        return fail("the loss (result #" + Twine(i) +
                    ") must be a rank-0 floating-point tensor");
      loss = i;
      sig.results.push_back({StepResult::Kind::Loss, "loss", std::nullopt});
      continue;
    }
    if (output) {
      sig.results.push_back(
          {StepResult::Kind::Output, output.getValue(), std::nullopt});
      continue;
    }
    StringRef name = update.getValue();
    auto it = argByName.find(name);
    if (it == argByName.end())
      return fail("result #" + Twine(i) + " updates '" + name +
                  "', which is not an argument");
    StepArgument &arg = sig.arguments[it->second];
    if (arg.role != ArgRole::Param && arg.role != ArgRole::State)
      return fail("result #" + Twine(i) + " updates '" + name +
                  "', which is not a tg.param or tg.state argument");
    if (arg.updatedBy)
      return fail("results #" + Twine(*arg.updatedBy) + " and #" + Twine(i) +
                  " both update '" + name + "'");
    if (resultTypes[i] != argTypes[it->second])
      return fail("result #" + Twine(i) + " updating '" + name +
                  "' must have the argument's type");
    arg.updatedBy = i;
    sig.results.push_back({StepResult::Kind::Update, name, it->second});
  }
  if (!loss)
    return fail("no result is marked tg.loss");
  sig.lossResult = *loss;
  for (const StepArgument &arg : sig.arguments)
    if ((arg.role == ArgRole::Param || arg.role == ArgRole::State) &&
        !arg.updatedBy)
      return fail("'" + arg.name + "' (" + stringifyArgRole(arg.role) +
                  ") is never updated; add a result with tg.update = \"" +
                  arg.name + "\"");
  return sig;
}

FailureOr<ForwardSignature>
mp::tg::getForwardSignature(FunctionOpInterface fn, bool emitErrors) {
  auto fail = [&](const Twine &message) -> LogicalResult {
    if (emitErrors)
      fn->emitOpError() << "is not a valid forward function: " << message;
    return failure();
  };
  ForwardSignature sig;
  llvm::StringMap<unsigned> argByName;
  ArrayRef<Type> argTypes = fn.getArgumentTypes();
  if (failed(readArguments(fn, fail, sig.arguments, argByName)))
    return failure();
  ArrayRef<Type> resultTypes = fn.getResultTypes();
  std::optional<unsigned> loss;
  for (unsigned i = 0, e = resultTypes.size(); i < e; ++i) {
    bool isLoss = static_cast<bool>(fn.getResultAttr(i, TGDialect::kLossAttr));
    auto update = fn.getResultAttrOfType<StringAttr>(i, TGDialect::kUpdateAttr);
    auto output = fn.getResultAttrOfType<StringAttr>(i, TGDialect::kOutputAttr);
    if (int(isLoss) + int(bool(update)) + int(bool(output)) > 1)
      return fail("result #" + Twine(i) +
                  " has more than one of tg.loss, tg.update and tg.output");
    if (isLoss) {
      if (loss)
        return fail("results #" + Twine(*loss) + " and #" + Twine(i) +
                    " are both marked tg.loss");
      loss = i;
      sig.results.push_back({StepResult::Kind::Loss, "loss", std::nullopt});
      continue;
    }
    if (!update) {
      sig.results.push_back({StepResult::Kind::Output,
                             output ? output.getValue() : StringRef(),
                             std::nullopt});
      continue;
    }
    // Forward functions update state (running statistics); the
    // differentiation pass adds the parameters' updates.
    StringRef name = update.getValue();
    auto it = argByName.find(name);
    if (it == argByName.end() ||
        sig.arguments[it->second].role != ArgRole::State)
      return fail("result #" + Twine(i) + " updates '" + name +
                  "', which is not a tg.state argument");
    StepArgument &arg = sig.arguments[it->second];
    if (arg.updatedBy)
      return fail("results #" + Twine(*arg.updatedBy) + " and #" + Twine(i) +
                  " both update '" + name + "'");
    if (resultTypes[i] != argTypes[it->second])
      return fail("result #" + Twine(i) + " updating '" + name +
                  "' must have the argument's type");
    arg.updatedBy = i;
    sig.results.push_back({StepResult::Kind::Update, name, it->second});
  }
  return sig;
}
