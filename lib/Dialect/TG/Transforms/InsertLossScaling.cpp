//===- InsertLossScaling.cpp - the tg-insert-loss-scaling pass ------------===//
//
// Loss scaling as ops of the training step. The pass finds the backward
// seeds and the optimizer updates through interfaces, scales the seeds,
// moves the updates behind one multi-tensor unscale-and-check, predicates
// them on its overflow flag, and (dynamic mode) threads the scale and the
// good-step counter through the step as state. Everything stays on the
// device: the skip is data, not control flow, so a whole step can be
// captured as one CUDA graph.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mp/Dialect/TG/IR/TGOps.h"
#include "mp/Dialect/TG/IR/TrainStep.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"

#include <cmath>

namespace mp::tg {
#define GEN_PASS_DEF_TGINSERTLOSSSCALING
#include "mp/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mp::tg

using namespace mlir;
using namespace mp::tg;

namespace {

enum class Mode { Auto, Dynamic, Static, None };

struct TGInsertLossScalingPass
    : public mp::tg::impl::TGInsertLossScalingBase<TGInsertLossScalingPass> {
  using Base::Base;

  LogicalResult checkOptions(Mode &parsed) {
    ModuleOp module = getOperation();
    auto err = [&]() -> InFlightDiagnostic {
      return module.emitError() << "tg-insert-loss-scaling: ";
    };
    std::optional<Mode> m = llvm::StringSwitch<std::optional<Mode>>(mode)
                                .Case("auto", Mode::Auto)
                                .Case("dynamic", Mode::Dynamic)
                                .Case("static", Mode::Static)
                                .Case("none", Mode::None)
                                .Default(std::nullopt);
    if (!m)
      return err() << "invalid mode '" << mode
                   << "'; expected auto, dynamic, static or none";
    parsed = *m;
    float f32Max = std::numeric_limits<float>::max();
    float f32Min = std::numeric_limits<float>::min();
    // Scales are stored in f32 and unscaling multiplies by the reciprocal:
    // both must be finite and non-zero there, so a scale must be a normal
    // f32 number (1e-50 is positive in f64 but 0 in f32).
    auto isScale = [&](double v) {
      return v <= f32Max && float(v) >= f32Min;
    };
    if (!isScale(initScale))
      return err() << "init-scale must be positive and finite in f32, and a "
                      "normal f32 number (at least "
                   << f32Min << ", so that its reciprocal is finite), got "
                   << initScale;
    if (!(growthFactor > 1 && growthFactor <= f32Max))
      return err() << "growth-factor must be greater than 1, got "
                   << growthFactor;
    if (!(backoffFactor < 1 && isScale(backoffFactor)))
      return err() << "backoff-factor must be in (0, 1) and a normal f32 "
                      "number, got "
                   << backoffFactor;
    if (growthInterval < 1)
      return err() << "growth-interval must be at least 1, got "
                   << int64_t(growthInterval);
    if (minScale != 0 && !isScale(minScale))
      return err() << "min-scale must be a normal positive f32 number (or 0 "
                      "for none), got "
                   << minScale;
    if (maxScale != 0 && !isScale(maxScale))
      return err() << "max-scale must be a normal positive f32 number (or 0 "
                      "for none), got "
                   << maxScale;
    if (minScale > 0 && maxScale > 0 && minScale > maxScale)
      return err() << "min-scale " << minScale << " exceeds max-scale "
                   << maxScale;
    return success();
  }

  /// Whether the step stores any value in f16 (auto mode's test).
  static bool storesF16(FunctionOpInterface fn) {
    bool found = false;
    fn->walk([&](Operation *op) {
      for (Type t : op->getResultTypes())
        if (getElementTypeOrSelf(t).isF16())
          found = true;
      return found ? WalkResult::interrupt() : WalkResult::advance();
    });
    return found;
  }

  LogicalResult scale(FunctionOpInterface fn, Mode m) {
    MLIRContext *ctx = &getContext();
    Block &body = fn.getFunctionBody().front();
    Operation *terminator = body.getTerminator();
    SmallVector<LossGradientOpInterface> seeds;
    SmallVector<OptimizerOpInterface> updates;
    bool scaled = false;
    fn->walk([&](Operation *op) {
      if (auto s = dyn_cast<LossGradientOpInterface>(op))
        seeds.push_back(s);
      if (auto u = dyn_cast<OptimizerOpInterface>(op))
        updates.push_back(u);
      scaled |= isa<ApplyLossScaleOp, UnscaleGradsOp>(op);
    });
    if (scaled) {
      fn.emitRemark("tg-insert-loss-scaling: step is already loss-scaled");
      return success();
    }
    if (seeds.empty() || updates.empty())
      return fn.emitError() << "tg-insert-loss-scaling: a training step "
                               "needs a loss gradient and an optimizer update "
                               "to scale (found "
                            << seeds.size() << " and " << updates.size()
                            << ")";
    for (OptimizerOpInterface u : updates) {
      if (u->getBlock() != &body)
        return u->emitError("tg-insert-loss-scaling: optimizer updates must "
                            "be in the step's entry block");
      // The updates move behind the unscale at the end of the step: their
      // results may only be returned.
      for (Operation *user : u->getUsers())
        if (user != terminator)
          return u->emitError("tg-insert-loss-scaling: the result of an "
                              "optimizer update may only be returned, but it "
                              "is used by ")
                 << user->getName();
    }

    Type f32Scalar = RankedTensorType::get({}, Float32Type::get(ctx));
    Type counter = RankedTensorType::get({}, IntegerType::get(ctx, 64));
    Location loc = NameLoc::get(StringAttr::get(ctx, "amp.loss_scale"),
                                fn.getLoc());
    auto scaleAttr = DenseElementsAttr::get(cast<ShapedType>(f32Scalar),
                                            float(initScale));
    Value scale, goodSteps;
    if (m == Mode::Dynamic) {
      unsigned n = fn.getNumArguments();
      auto stateAttrs = [&](StringRef name, Attribute init) {
        return DictionaryAttr::get(
            ctx, {NamedAttribute(TGDialect::kStateAttr,
                                 StringAttr::get(ctx, name)),
                  NamedAttribute(TGDialect::kInitAttr, init)});
      };
      if (failed(fn.insertArgument(n, f32Scalar,
                                   stateAttrs("amp.loss_scale", scaleAttr),
                                   loc)) ||
          failed(fn.insertArgument(
              n + 1, counter,
              stateAttrs("amp.good_steps",
                         DenseElementsAttr::get(cast<ShapedType>(counter),
                                                int64_t(0))),
              loc)))
        return failure();
      scale = body.getArgument(n);
      goodSteps = body.getArgument(n + 1);
    } else {
      OpBuilder b = OpBuilder::atBlockBegin(&body);
      scale = ConstantOp::create(b, loc, f32Scalar, scaleAttr);
    }

    // Scale every seed of the backward pass.
    OpBuilder b(ctx);
    for (LossGradientOpInterface s : seeds) {
      OpOperand &seed = s.getSeedOperand();
      b.setInsertionPoint(s);
      Value scaled = ApplyLossScaleOp::create(
          b, NameLoc::get(StringAttr::get(ctx, "amp.scale_seed"), s->getLoc()),
          seed.get().getType(), seed.get(), scale, /*compute=*/nullptr);
      seed.set(scaled);
    }

    // One unscale-and-check over all gradients (each once), then the
    // updates; `position` maps a gradient to its unscaled result.
    SmallVector<Value> grads;
    DenseMap<Value, unsigned> position;
    for (OptimizerOpInterface u : updates) {
      Value g = u.getGradOperand().get();
      if (position.try_emplace(g, grads.size()).second)
        grads.push_back(g);
    }
    for (OptimizerOpInterface u : updates)
      u->moveBefore(terminator);
    b.setInsertionPoint(updates.front());
    SmallVector<Type> types(llvm::map_range(
        grads, [](Value v) { return v.getType(); }));
    types.push_back(RankedTensorType::get({}, IntegerType::get(ctx, 1)));
    auto unscale = UnscaleGradsOp::create(
        b, NameLoc::get(StringAttr::get(ctx, "amp.unscale"), fn.getLoc()),
        types, grads, scale, /*compute=*/nullptr);
    Value foundInf = unscale.getFoundInf();
    for (OptimizerOpInterface u : updates) {
      OpOperand &grad = u.getGradOperand();
      grad.set(unscale.getUnscaled()[position.lookup(grad.get())]);
      u.setSkipPredicate(foundInf);
    }

    if (m == Mode::Dynamic) {
      b.setInsertionPoint(terminator);
      auto update = UpdateLossScaleOp::create(
          b, NameLoc::get(StringAttr::get(ctx, "amp.update_scale"),
                          fn.getLoc()),
          TypeRange{f32Scalar, counter}, scale, goodSteps, foundInf,
          b.getF32FloatAttr(growthFactor), b.getF32FloatAttr(backoffFactor),
          b.getI64IntegerAttr(growthInterval),
          minScale > 0 ? b.getF32FloatAttr(minScale) : FloatAttr(),
          maxScale > 0 ? b.getF32FloatAttr(maxScale) : FloatAttr(),
          /*compute=*/nullptr);
      unsigned r = fn.getNumResults();
      auto updateAttrs = [&](StringRef name) {
        return DictionaryAttr::get(
            ctx, {NamedAttribute(TGDialect::kUpdateAttr,
                                 StringAttr::get(ctx, name))});
      };
      if (failed(fn.insertResult(r, f32Scalar, updateAttrs("amp.loss_scale"))) ||
          failed(fn.insertResult(r + 1, counter,
                                 updateAttrs("amp.good_steps"))))
        return failure();
      terminator->insertOperands(terminator->getNumOperands(),
                                 update.getResults());
    }
    // The skip predicate is also an output, so the runtime can count skipped
    // steps without a host round trip inside the step.
    unsigned r = fn.getNumResults();
    if (failed(fn.insertResult(
            r, foundInf.getType(),
            DictionaryAttr::get(
                ctx, {NamedAttribute(TGDialect::kOutputAttr,
                                     StringAttr::get(ctx, "amp.found_inf"))}))))
      return failure();
    terminator->insertOperands(terminator->getNumOperands(), foundInf);
    return success();
  }

  void runOnOperation() override {
    Mode m;
    if (failed(checkOptions(m)))
      return signalPassFailure();
    SmallVector<FunctionOpInterface> steps;
    getOperation().walk([&](FunctionOpInterface fn) {
      if (isTrainStep(fn) && !fn.isExternal())
        steps.push_back(fn);
    });
    for (FunctionOpInterface fn : steps) {
      Mode fnMode = m;
      if (m == Mode::Auto)
        fnMode = storesF16(fn) ? Mode::Dynamic : Mode::None;
      if (fnMode == Mode::None)
        continue;
      if (failed(scale(fn, fnMode)))
        return signalPassFailure();
    }
  }
};

} // namespace
