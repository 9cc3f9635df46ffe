//===- MakeTrainStep.cpp - the tg-make-train-step pass --------------------===//
//
// Reverse-mode automatic differentiation of a forward function, then the
// optimizer: the result is a training step (docs/TrainingStep.md).
//
// The forward function is one block in program order. Two sweeps find the
// active values: forward from the parameters (values that vary with them)
// and backward from the loss (values it depends on). A reverse sweep then
// visits every op with an active operand and an adjoint on some result, and
// asks it (DifferentiableOpInterface) for the adjoints of its active
// operands; adjoints of a value used several times are summed (a split's
// slice gradients by a concat). Adjoint ops are appended before the return,
// so each is built after everything it reads. The seed, `tg.constant
// dense<1.0>` named "loss.seed", feeds the loss op's gradient, which is
// where tg-insert-loss-scaling multiplies it by the loss scale.
//
// docs/Autodiff.md describes the algorithm and the options.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mp/Dialect/TG/IR/TGOps.h"
#include "mp/Dialect/TG/IR/TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/GlobPattern.h"

namespace mp::tg {
#define GEN_PASS_DEF_TGMAKETRAINSTEP
#include "mp/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mp::tg

using namespace mlir;
using namespace mp::tg;

namespace {

enum class LossKind { Auto, None, SoftmaxCrossEntropy, Mse };
enum class Optimizer { Sgd, Adam, AdamW, None };

/// The validated options.
struct Config {
  LossKind loss = LossKind::None;
  std::string label;
  Optimizer optimizer = Optimizer::Sgd;
  double lr = 0, momentum = 0, weightDecay = 0, beta1 = 0.9, beta2 = 0.999,
         epsilon = 1e-8;
  bool nesterov = false;
  std::vector<llvm::GlobPattern> noDecay;
};

Location named(MLIRContext *ctx, const Twine &name, Location child) {
  return NameLoc::get(StringAttr::get(ctx, name), child);
}

/// One forward function becoming a training step.
class Differentiator {
public:
  Differentiator(func::FuncOp fn, const Config &config)
      : fn(fn), config(config), ctx(fn.getContext()), b(fn.getContext()) {}

  LogicalResult run();

private:
  LogicalResult addLoss();
  LogicalResult addLoss(LossKind kind);
  /// For loss=auto: the function's own loss when it returns one, else
  /// softmax cross-entropy for integer labels and MSE for float labels.
  LossKind chooseLoss();
  void findActive();
  LogicalResult differentiate();
  LogicalResult accumulate(Value value, Value adjoint, Operation *from);
  /// Optimizer state the update of a parameter needs, as new arguments.
  struct NewState {
    std::string name;
    Type type;
    Attribute init;
    Location loc;
  };
  void stateOf(unsigned k, SmallVectorImpl<NewState> &out);
  /// Appends the update of parameter argument `k` with its `state`
  /// arguments; returns the new values and their names (the parameter,
  /// then its optimizer state).
  void update(unsigned k, Value grad, ArrayRef<BlockArgument> state,
              SmallVectorImpl<std::pair<Value, std::string>> &results);
  LogicalResult finish();

  func::FuncOp fn;
  const Config &config;
  MLIRContext *ctx;
  OpBuilder b;
  ForwardSignature sig;
  /// The return's operands and their kinds, as they will be returned.
  SmallVector<Value> returned;
  SmallVector<StepResult> kinds;
  SmallVector<std::string> names;
  Value loss;
  /// For each value varying with a parameter: the first such parameter.
  DenseMap<Value, unsigned> variedFrom;
  /// Values the loss depends on.
  DenseSet<Value> useful;
  DenseMap<Value, Value> adjoints;
};

LossKind Differentiator::chooseLoss() {
  FunctionType type = fn.getFunctionType();
  for (auto [i, r] : llvm::enumerate(sig.results))
    if (r.kind == StepResult::Kind::Loss)
      return LossKind::None;
  if (type.getNumResults() == 1 && sig.results[0].name.empty())
    if (auto t = dyn_cast<RankedTensorType>(type.getResult(0));
        t && t.getRank() == 0)
      return LossKind::None;
  for (auto [k, a] : llvm::enumerate(sig.arguments))
    if (a.role == ArgRole::Label &&
        (config.label.empty() || a.name == config.label))
      return isa<IntegerType>(getElementTypeOrSelf(type.getInput(k)))
                 ? LossKind::SoftmaxCrossEntropy
                 : LossKind::Mse;
  return LossKind::None;
}

LogicalResult Differentiator::addLoss() {
  return addLoss(config.loss == LossKind::Auto ? chooseLoss() : config.loss);
}

LogicalResult Differentiator::addLoss(LossKind kind) {
  Operation *ret = fn.front().getTerminator();
  returned.assign(ret->getOperands().begin(), ret->getOperands().end());
  kinds.assign(sig.results.begin(), sig.results.end());
  for (const StepResult &r : sig.results)
    names.push_back(r.name.str());
  auto isUnmarked = [&](unsigned i) {
    return kinds[i].kind == StepResult::Kind::Output && names[i].empty();
  };
  std::optional<unsigned> lossIndex;
  for (auto [i, r] : llvm::enumerate(kinds))
    if (r.kind == StepResult::Kind::Loss)
      lossIndex = i;

  if (kind == LossKind::None) {
    if (!lossIndex && returned.size() == 1 && isUnmarked(0))
      lossIndex = 0;
    if (!lossIndex)
      return fn.emitError()
             << "tg-make-train-step: the forward function returns no loss: "
                "mark its scalar loss tg.loss, or return the logits and give "
                "loss=softmax-cross-entropy or loss=mse";
    auto type = dyn_cast<RankedTensorType>(returned[*lossIndex].getType());
    if (!type || type.getRank() != 0 ||
        !isa<FloatType>(type.getElementType()))
      return ret->emitError()
             << "tg-make-train-step: the loss (result #" << *lossIndex
             << ") must be a rank-0 floating-point tensor, got "
             << returned[*lossIndex].getType()
             << "; to train on logits give loss=softmax-cross-entropy or "
                "loss=mse";
    loss = returned[*lossIndex];
    kinds[*lossIndex] = {StepResult::Kind::Loss, "loss", std::nullopt};
    names[*lossIndex] = "loss";
    // The loss goes first.
    std::rotate(returned.begin(), returned.begin() + *lossIndex,
                returned.begin() + *lossIndex + 1);
    std::rotate(kinds.begin(), kinds.begin() + *lossIndex,
                kinds.begin() + *lossIndex + 1);
    std::rotate(names.begin(), names.begin() + *lossIndex,
                names.begin() + *lossIndex + 1);
  } else {
    if (lossIndex)
      return fn.emitError() << "tg-make-train-step: the forward function "
                               "returns a loss (result #"
                            << *lossIndex << ") and loss= asks for another";
    // The prediction: the output named logits, else the only unmarked one.
    std::optional<unsigned> prediction;
    for (unsigned i = 0; i < returned.size(); ++i)
      if (names[i] == "logits")
        prediction = i;
    if (!prediction) {
      SmallVector<unsigned> unmarked;
      for (unsigned i = 0; i < returned.size(); ++i)
        if (isUnmarked(i))
          unmarked.push_back(i);
      if (unmarked.size() == 1)
        prediction = unmarked.front();
    }
    if (!prediction)
      return fn.emitError()
             << "tg-make-train-step: loss= needs the prediction: mark it "
                "tg.output = \"logits\" (or return it alone, unmarked)";
    // The labels.
    std::optional<unsigned> label;
    for (auto [k, a] : llvm::enumerate(sig.arguments))
      if (a.role == ArgRole::Label &&
          (config.label.empty() || a.name == config.label)) {
        if (label)
          return fn.emitError()
                 << "tg-make-train-step: the function has several tg.label "
                    "arguments; name the one the loss compares with "
                    "(label=<name>)";
        label = k;
      }
    if (!label)
      return fn.emitError() << "tg-make-train-step: loss= needs a tg.label "
                               "argument"
                            << (config.label.empty()
                                    ? ""
                                    : " named '" + config.label + "'");
    Value pred = returned[*prediction];
    Value labels = fn.getArgument(*label);
    b.setInsertionPoint(ret);
    Location loc = named(ctx, "loss", ret->getLoc());
    // f32 (or f64 for an f64 model): the loss of a low-precision model is
    // still accumulated and stored in f32.
    Type predElement = getElementTypeOrSelf(pred.getType());
    Type scalar = RankedTensorType::get(
        {}, predElement.isF64() ? predElement : Float32Type::get(ctx));
    Operation *lossOp;
    if (kind == LossKind::SoftmaxCrossEntropy)
      lossOp = SoftmaxCrossEntropyOp::create(b, loc, scalar, pred, labels,
                                             nullptr);
    else
      lossOp = MseLossOp::create(b, loc, scalar, pred, labels, nullptr);
    // The shapes and types are the user's: check them here, where the
    // diagnostic can say which option put the op there.
    if (failed(verify(lossOp))) {
      lossOp->erase();
      return ret->emitError()
             << "tg-make-train-step: the loss cannot compare the prediction ("
             << pred.getType() << ") with '" << sig.arguments[*label].name
             << "' (" << labels.getType() << "); see the error above";
    }
    loss = lossOp->getResult(0);
    if (names[*prediction].empty()) {
      names[*prediction] =
          kind == LossKind::Mse ? "prediction" : "logits";
    }
    returned.insert(returned.begin(), loss);
    kinds.insert(kinds.begin(), {StepResult::Kind::Loss, "loss", std::nullopt});
    names.insert(names.begin(), "loss");
  }
  // Unmarked results that are neither loss nor prediction are outputs.
  for (auto [i, name] : llvm::enumerate(names))
    if (name.empty())
      name = "output" + std::to_string(i);
  return success();
}

void Differentiator::findActive() {
  Block &body = fn.front();
  for (auto [k, a] : llvm::enumerate(sig.arguments))
    if (a.role == ArgRole::Param)
      variedFrom[fn.getArgument(k)] = k;
  for (Operation &op : body.without_terminator()) {
    std::optional<unsigned> from;
    for (Value v : op.getOperands())
      if (auto it = variedFrom.find(v); it != variedFrom.end() && !from)
        from = it->second;
    if (!from)
      continue;
    for (Value r : op.getResults())
      if (isa<FloatType>(getElementTypeOrSelf(r.getType())))
        variedFrom[r] = *from;
  }
  useful.insert(loss);
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (llvm::none_of(op.getResults(),
                      [&](Value r) { return useful.contains(r); }))
      continue;
    for (Value v : op.getOperands())
      useful.insert(v);
  }
}

LogicalResult Differentiator::accumulate(Value value, Value adjoint,
                                         Operation *from) {
  if (adjoint.getType() != value.getType()) {
    auto want = cast<RankedTensorType>(value.getType());
    auto got = cast<RankedTensorType>(adjoint.getType());
    if (want.getShape() != got.getShape())
      return from->emitError()
             << "tg-make-train-step: the adjoint rule of '" << from->getName()
             << "' built an adjoint of type " << got << " for an operand of "
             << "type " << want;
    adjoint = CastOp::create(b, adjoint.getLoc(), want, adjoint);
  }
  Value &slot = adjoints[value];
  if (!slot) {
    slot = adjoint;
    return success();
  }
  // A value used several times: its adjoint is the sum over its uses.
  Location loc = adjoint.getLoc();
  if (auto name = dyn_cast<NameLoc>(value.getLoc()))
    loc = named(ctx, name.getName().str() + ".grad_sum", name.getChildLoc());
  slot = AddOp::create(b, loc, value.getType(), slot, adjoint, nullptr);
  return success();
}

LogicalResult Differentiator::differentiate() {
  Block &body = fn.front();
  Operation *ret = body.getTerminator();
  b.setInsertionPoint(ret);
  auto lossType = cast<RankedTensorType>(loss.getType());
  Location seedLoc = named(ctx, "loss.seed", ret->getLoc());
  Value seed = ConstantOp::create(
      b, seedLoc, lossType,
      DenseElementsAttr::get(lossType,
                             b.getFloatAttr(lossType.getElementType(), 1.0)));
  adjoints[loss] = seed;

  // Ops in reverse program order, stopping at the first adjoint op built.
  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);
  auto paramName = [&](Value v) {
    return sig.arguments[variedFrom.lookup(v)].name;
  };
  for (Operation *op : llvm::reverse(forward)) {
    SmallVector<Value> resultAdjoints;
    bool any = false;
    for (Value r : op->getResults()) {
      resultAdjoints.push_back(adjoints.lookup(r));
      any |= bool(resultAdjoints.back());
    }
    if (!any)
      continue;
    SmallVector<bool> wanted;
    std::optional<Value> activeOperand;
    for (Value v : op->getOperands()) {
      bool active = variedFrom.count(v) && useful.contains(v) &&
                    isa<FloatType>(getElementTypeOrSelf(v.getType()));
      wanted.push_back(active);
      if (active && !activeOperand)
        activeOperand = v;
    }
    if (!activeOperand)
      continue;
    auto diff = dyn_cast<DifferentiableOpInterface>(op);
    if (!diff)
      return op->emitError()
             << "'" << op->getName()
             << "' is not differentiable, and it lies between parameter '"
             << paramName(*activeOperand)
             << "' and the loss; rewrite the forward pass without it, or "
                "give it an adjoint rule (docs/Autodiff.md)";
    for (auto [i, adj] : llvm::enumerate(resultAdjoints))
      if (adj && !diff.isDifferentiableResult(i))
        return op->emitError()
               << "result #" << i << " of '" << op->getName()
               << "' is not differentiable, but the loss depends on it";
    for (auto [k, want] : llvm::enumerate(wanted))
      if (want && !diff.isDifferentiableOperand(k))
        return op->emitError()
               << "operand #" << k << " of '" << op->getName()
               << "' is not differentiable, but it depends on parameter '"
               << paramName(op->getOperand(k)) << "'";
    SmallVector<Value> operandAdjoints;
    b.setInsertionPoint(ret);
    if (failed(diff.buildAdjoints(b, resultAdjoints, wanted, operandAdjoints)))
      return failure();
    for (auto [k, want] : llvm::enumerate(wanted)) {
      if (!want)
        continue;
      if (k >= operandAdjoints.size() || !operandAdjoints[k])
        return op->emitError() << "tg-make-train-step: the adjoint rule of '"
                               << op->getName()
                               << "' built no adjoint for operand #" << k;
      b.setInsertionPoint(ret);
      if (failed(accumulate(op->getOperand(k), operandAdjoints[k], op)))
        return failure();
    }
  }
  // Loss scaling multiplies the seed where a loss op's gradient takes it.
  // A loss built from other ops (a mean of squares) gets a tg.seed marking
  // the start of the backward pass instead.
  bool takenByLossGradient = llvm::any_of(seed.getUses(), [](OpOperand &use) {
    auto grad = dyn_cast<LossGradientOpInterface>(use.getOwner());
    return grad && &grad.getSeedOperand() == &use;
  });
  if (!takenByLossGradient && !seed.use_empty()) {
    b.setInsertionPointAfterValue(seed);
    auto marker = SeedOp::create(b, seedLoc, lossType, seed);
    seed.replaceAllUsesExcept(marker, marker);
  }
  return success();
}

void Differentiator::stateOf(unsigned k, SmallVectorImpl<NewState> &out) {
  auto type = cast<RankedTensorType>(fn.getArgument(k).getType());
  std::string name = sig.arguments[k].name.str();
  auto zeros = [&](RankedTensorType t) -> Attribute {
    if (isa<FloatType>(t.getElementType()))
      return DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), 0));
    return DenseElementsAttr::get(t, b.getIntegerAttr(t.getElementType(), 0));
  };
  Location loc = fn.getArgument(k).getLoc();
  if (config.optimizer == Optimizer::Sgd) {
    if (config.momentum > 0)
      out.push_back({name + ".momentum", type, zeros(type), loc});
    return;
  }
  auto counter = RankedTensorType::get({}, IntegerType::get(ctx, 64));
  out.push_back({name + ".exp_avg", type, zeros(type), loc});
  out.push_back({name + ".exp_avg_sq", type, zeros(type), loc});
  out.push_back({name + ".step", counter, zeros(counter), loc});
}

void Differentiator::update(
    unsigned k, Value grad, ArrayRef<BlockArgument> state,
    SmallVectorImpl<std::pair<Value, std::string>> &results) {
  BlockArgument param = fn.getArgument(k);
  std::string name = sig.arguments[k].name.str();
  auto type = cast<RankedTensorType>(param.getType());
  Type element = type.getElementType();
  Location loc = param.getLoc();
  double decay = config.weightDecay;
  for (const llvm::GlobPattern &glob : config.noDecay)
    if (glob.match(name))
      decay = 0;
  auto f32 = [&](double v) { return b.getF32FloatAttr(float(v)); };
  b.setInsertionPoint(fn.front().getTerminator());

  if (config.optimizer == Optimizer::Sgd) {
    Value buffer = state.empty() ? Value() : Value(state.front());
    auto op = SgdUpdateOp::create(
        b, named(ctx, name + ".sgd", loc), type, buffer ? type : Type(), param,
        grad, buffer, Value(), f32(config.lr), f32(config.momentum),
        f32(decay), config.nesterov ? b.getUnitAttr() : UnitAttr(), nullptr);
    results.push_back({op.getNewParam(), name});
    if (buffer)
      results.push_back({op.getNewMomentumBuffer(), name + ".momentum"});
    return;
  }
  // tg.adam_update decays decoupled (AdamW); Adam's weight decay is L2,
  // added to the gradient as torch.optim.Adam does.
  double decoupled = decay;
  if (config.optimizer == Optimizer::Adam && decay > 0) {
    Location decayLoc = named(ctx, name + ".weight_decay", loc);
    auto scalar = RankedTensorType::get({}, element);
    Value wd = ConstantOp::create(
        b, decayLoc, scalar,
        DenseElementsAttr::get(scalar, b.getFloatAttr(element, decay)));
    Value term = MulOp::create(b, decayLoc, type, param, wd, nullptr);
    grad = AddOp::create(b, decayLoc, type, grad, term, nullptr);
    decoupled = 0;
  }
  auto counter = RankedTensorType::get({}, IntegerType::get(ctx, 64));
  auto op = AdamUpdateOp::create(
      b, named(ctx, name + ".adam", loc), type, type, type, counter, param,
      grad, state[0], state[1], state[2], Value(), f32(config.lr),
      f32(config.beta1), f32(config.beta2), f32(config.epsilon),
      f32(decoupled), nullptr);
  results.push_back({op.getNewParam(), name});
  results.push_back({op.getNewFirstMoment(), name + ".exp_avg"});
  results.push_back({op.getNewSecondMoment(), name + ".exp_avg_sq"});
  results.push_back({op.getNewStep(), name + ".step"});
}

LogicalResult Differentiator::finish() {
  Block &body = fn.front();
  Operation *ret = body.getTerminator();
  // Updates: the parameters and their optimizer state, after the forward's
  // own results (loss, outputs, state updates).
  SmallVector<std::pair<Value, std::string>> updates, gradients;
  // The optimizer state of every parameter, added in one go (adding
  // arguments one at a time rebuilds the signature each time).
  SmallVector<NewState> states;
  DenseMap<unsigned, std::pair<unsigned, unsigned>> stateRange;
  if (config.optimizer != Optimizer::None)
    for (auto [k, a] : llvm::enumerate(sig.arguments))
      if (a.role == ArgRole::Param && adjoints.count(fn.getArgument(k))) {
        unsigned first = states.size();
        stateOf(k, states);
        stateRange[k] = {first, unsigned(states.size()) - first};
      }
  unsigned firstState = fn.getNumArguments();
  if (!states.empty()) {
    SmallVector<unsigned> indices(states.size(), firstState);
    SmallVector<Type> types;
    SmallVector<DictionaryAttr> attrs;
    SmallVector<Location> locs;
    for (const NewState &st : states) {
      types.push_back(st.type);
      attrs.push_back(DictionaryAttr::get(
          ctx, {NamedAttribute(StringAttr::get(ctx, TGDialect::kStateAttr),
                               StringAttr::get(ctx, st.name)),
                NamedAttribute(StringAttr::get(ctx, TGDialect::kInitAttr),
                               st.init)}));
      locs.push_back(st.loc);
    }
    if (failed(fn.insertArguments(indices, types, attrs, locs)))
      return failure();
  }
  for (auto [k, a] : llvm::enumerate(sig.arguments)) {
    if (a.role != ArgRole::Param)
      continue;
    Value grad = adjoints.lookup(fn.getArgument(k));
    if (grad && config.optimizer == Optimizer::None) {
      // No update: the gradient is an output, the parameter unchanged.
      gradients.push_back({grad, "grad." + a.name.str()});
      updates.push_back({fn.getArgument(k), a.name.str()});
      continue;
    }
    if (!grad) {
      mlir::emitWarning(fn.getArgument(k).getLoc())
          << "tg-make-train-step: parameter '" << a.name
          << "' does not reach the loss; it is returned unchanged";
      updates.push_back({fn.getArgument(k), a.name.str()});
      continue;
    }
    auto [first, count] = stateRange.lookup(k);
    SmallVector<BlockArgument> state;
    for (unsigned i = 0; i < count; ++i)
      state.push_back(fn.getArgument(firstState + first + i));
    update(k, grad, state, updates);
  }
  // State the forward function reads but does not update stays as it is.
  for (auto [k, a] : llvm::enumerate(sig.arguments))
    if (a.role == ArgRole::State && !a.updatedBy)
      updates.push_back({fn.getArgument(k), a.name.str()});
  SmallVector<Value> operands(returned);
  SmallVector<DictionaryAttr> resultAttrs;
  auto attr = [&](StringRef key, Attribute value) {
    return DictionaryAttr::get(ctx, {NamedAttribute(StringAttr::get(ctx, key),
                                                    value)});
  };
  for (auto [i, r] : llvm::enumerate(kinds)) {
    if (r.kind == StepResult::Kind::Loss)
      resultAttrs.push_back(attr(TGDialect::kLossAttr, UnitAttr::get(ctx)));
    else if (r.kind == StepResult::Kind::Update)
      resultAttrs.push_back(
          attr(TGDialect::kUpdateAttr, StringAttr::get(ctx, names[i])));
    else
      resultAttrs.push_back(
          attr(TGDialect::kOutputAttr, StringAttr::get(ctx, names[i])));
  }
  for (auto &[value, name] : gradients) {
    operands.push_back(value);
    resultAttrs.push_back(
        attr(TGDialect::kOutputAttr, StringAttr::get(ctx, name)));
  }
  for (auto &[value, name] : updates) {
    operands.push_back(value);
    resultAttrs.push_back(
        attr(TGDialect::kUpdateAttr, StringAttr::get(ctx, name)));
  }
  b.setInsertionPoint(ret);
  func::ReturnOp::create(b, ret->getLoc(), operands);
  ret->erase();
  fn.setType(FunctionType::get(ctx, fn.getArgumentTypes(),
                               ValueRange(operands).getTypes()));
  fn.setAllResultAttrs(resultAttrs);
  fn->removeAttr(TGDialect::kForwardAttr);
  fn->setAttr(TGDialect::kTrainStepAttr, UnitAttr::get(ctx));

  // Dead code: forward values nothing needs any more.
  for (Operation *op = body.getTerminator()->getPrevNode(); op;) {
    Operation *previous = op->getPrevNode();
    if (isOpTriviallyDead(op))
      op->erase();
    op = previous;
  }
  return success();
}

LogicalResult Differentiator::run() {
  if (!fn.getBody().hasOneBlock())
    return fn.emitError()
           << "tg-make-train-step: the forward function must be one block";
  FailureOr<ForwardSignature> forward = getForwardSignature(fn);
  if (failed(forward))
    return failure();
  sig = std::move(*forward);
  if (failed(addLoss()))
    return failure();
  findActive();
  if (failed(differentiate()) || failed(finish()))
    return failure();
  return getTrainStepSignature(fn);
}

struct TGMakeTrainStepPass
    : public mp::tg::impl::TGMakeTrainStepBase<TGMakeTrainStepPass> {
  using Base::Base;

  LogicalResult buildConfig(Config &c) {
    auto err = [&]() {
      return mlir::emitError(getOperation().getLoc()) << "tg-make-train-step: ";
    };
    std::optional<LossKind> l =
        llvm::StringSwitch<std::optional<LossKind>>(loss)
            .Case("auto", LossKind::Auto)
            .Case("none", LossKind::None)
            .Case("softmax-cross-entropy", LossKind::SoftmaxCrossEntropy)
            .Case("mse", LossKind::Mse)
            .Default(std::nullopt);
    if (!l)
      return err() << "invalid loss '" << loss
                   << "'; expected auto, none, softmax-cross-entropy or mse";
    std::optional<Optimizer> o =
        llvm::StringSwitch<std::optional<Optimizer>>(optimizer)
            .Case("sgd", Optimizer::Sgd)
            .Case("adam", Optimizer::Adam)
            .Case("adamw", Optimizer::AdamW)
            .Case("none", Optimizer::None)
            .Default(std::nullopt);
    if (!o)
      return err() << "invalid optimizer '" << optimizer
                   << "'; expected sgd, adam, adamw or none";
    c.loss = *l;
    c.label = label;
    c.optimizer = *o;
    c.lr = lr.hasValue() ? double(lr)
                         : (*o == Optimizer::Sgd ? 0.01 : 0.001);
    c.weightDecay = weightDecay.hasValue()
                        ? double(weightDecay)
                        : (*o == Optimizer::AdamW ? 0.01 : 0.0);
    c.momentum = momentum;
    c.nesterov = nesterov;
    c.beta1 = beta1;
    c.beta2 = beta2;
    c.epsilon = epsilon;
    auto finiteF32 = [](double v) {
      return std::isfinite(v) && std::abs(v) <= 3.4e38;
    };
    if (!(c.lr > 0) || !finiteF32(c.lr))
      return err() << "lr must be positive and finite in f32, got " << lr;
    if (!(c.momentum >= 0 && c.momentum < 1))
      return err() << "momentum must be in [0, 1), got " << momentum;
    if (c.nesterov && c.momentum == 0)
      return err() << "nesterov needs momentum > 0";
    if ((c.momentum > 0 || c.nesterov) && *o != Optimizer::Sgd)
      return err() << "momentum and nesterov are sgd options; adam has beta1";
    if (!(c.weightDecay >= 0) || !finiteF32(c.weightDecay))
      return err() << "weight-decay must be non-negative and finite, got "
                   << weightDecay;
    if (!(c.beta1 >= 0 && c.beta1 < 1) || !(c.beta2 >= 0 && c.beta2 < 1))
      return err() << "beta1 and beta2 must be in [0, 1), got " << beta1
                   << " and " << beta2;
    if (!(c.epsilon > 0) || !finiteF32(c.epsilon))
      return err() << "epsilon must be positive and finite, got " << epsilon;
    for (const std::string &pattern : noDecay) {
      auto glob = llvm::GlobPattern::create(pattern);
      if (!glob)
        return err() << "invalid no-decay pattern '" << pattern
                     << "': " << llvm::toString(glob.takeError());
      c.noDecay.push_back(std::move(*glob));
    }
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Config config;
    if (failed(buildConfig(config)))
      return signalPassFailure();
    SmallVector<func::FuncOp> functions;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (!entry.empty() ? fn.getSymName() == entry : isForward(fn))
        functions.push_back(fn);
    }
    if (entry.empty() && functions.empty() &&
        llvm::none_of(module.getOps<func::FuncOp>(),
                      [](func::FuncOp fn) { return isTrainStep(fn); })) {
      // Nothing to differentiate, and nothing differentiated before: most
      // likely a forward function someone forgot to mark.
      auto fns = module.getOps<func::FuncOp>();
      mlir::emitWarning(fns.empty() ? module.getLoc() : (*fns.begin()).getLoc())
          << "tg-make-train-step: no function is marked tg.forward, so "
             "nothing was differentiated; mark the forward function with "
             "the unit attribute `tg.forward` or name it with "
             "`entry=<name>`";
      return;
    }
    if (!entry.empty() && functions.empty()) {
      mlir::emitError(module.getLoc())
          << "tg-make-train-step: no function named '" << entry << "'";
      return signalPassFailure();
    }
    if (!entry.empty() && isTrainStep(functions.front())) {
      functions.front().emitError()
          << "tg-make-train-step: '" << entry
          << "' is a training step already";
      return signalPassFailure();
    }
    for (func::FuncOp fn : functions) {
      if (failed(Differentiator(fn, config).run()))
        return signalPassFailure();
      // The adjoint of a split (slices tiling a tensor) was built as a sum
      // of slice gradients: it becomes a concat (TGCanonicalize.cpp).
      RewritePatternSet patterns(&getContext());
      AddOp::getCanonicalizationPatterns(patterns, &getContext());
      walkAndApplyPatterns(fn, FrozenRewritePatternSet(std::move(patterns)));
      // The adds and slice gradients a concat replaced are dead now; in
      // reverse order, each is dead by the time it is visited.
      for (Operation &op :
           llvm::make_early_inc_range(llvm::reverse(fn.front())))
        if (isOpTriviallyDead(&op))
          op.erase();
      // Adjoints of a value used twice read the same forward values: CSE
      // merges what the rules built more than once.
      OpPassManager cleanup(func::FuncOp::getOperationName());
      cleanup.addPass(createCSEPass());
      if (failed(runPipeline(cleanup, fn)))
        return signalPassFailure();
    }
  }
};

} // namespace
