//===- ShadowWeights.cpp - the tg-shadow-weights pass ---------------------===//
//
// Gives each f32 master weight that a mixed-precision step casts to f16 or
// bf16 a shadow: a state argument holding the weight already rounded, read
// where the casts were, and refreshed by a cast of the updated weight that
// the lowering fuses into the optimizer update. The step stops reading its
// master weights once more per step to cast them.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mp/Dialect/TG/IR/TGOps.h"
#include "mp/Dialect/TG/IR/TrainStep.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSet.h"

namespace mp::tg {
#define GEN_PASS_DEF_TGSHADOWWEIGHTS
#include "mp/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mp::tg

using namespace mlir;
using namespace mp;
using namespace mp::tg;

namespace {

/// The new value of `param` if one tg.sgd_update or tg.adam_update updates
/// it, else null.
Value updatedValue(Value param) {
  Value updated;
  for (Operation *user : param.getUsers()) {
    Value next;
    if (auto u = dyn_cast<SgdUpdateOp>(user); u && u.getParam() == param)
      next = u.getNewParam();
    else if (auto u = dyn_cast<AdamUpdateOp>(user); u && u.getParam() == param)
      next = u.getNewParam();
    else
      continue;
    if (updated)
      return Value();
    updated = next;
  }
  return updated;
}

class ShadowWeights
    : public mp::tg::impl::TGShadowWeightsBase<ShadowWeights> {
public:
  using TGShadowWeightsBase::TGShadowWeightsBase;

  void runOnOperation() override {
    SmallVector<FunctionOpInterface> steps;
    // A step that is called keeps its signature.
    getOperation().walk([&](FunctionOpInterface fn) {
      if (isTrainStep(fn) && !fn.isExternal() &&
          SymbolTable::symbolKnownUseEmpty(fn, getOperation()))
        steps.push_back(fn);
    });
    for (FunctionOpInterface fn : steps)
      if (failed(shadow(fn)))
        return signalPassFailure();
  }

private:
  LogicalResult shadow(FunctionOpInterface fn) {
    FailureOr<TrainStepSignature> sig = getTrainStepSignature(fn);
    if (failed(sig))
      return failure();
    Block &body = fn.getFunctionBody().front();
    Operation *terminator = body.getTerminator();
    MLIRContext *ctx = fn->getContext();
    llvm::StringSet<> names;
    for (const StepArgument &a : sig->arguments)
      names.insert(a.name);

    // The arguments added below come after these.
    unsigned params = sig->arguments.size();
    for (unsigned k = 0; k < params; ++k) {
      const StepArgument &a = sig->arguments[k];
      if (a.role != ArgRole::Param || !a.updatedBy)
        continue;
      Value param = body.getArgument(k);
      auto type = cast<RankedTensorType>(param.getType());
      if (!type.getElementType().isF32())
        continue;
      // Its casts to one narrower type, and its update, returned as its.
      SmallVector<CastOp> casts;
      Type low;
      bool mixed = false;
      for (Operation *user : param.getUsers())
        if (auto c = dyn_cast<CastOp>(user)) {
          Type to = getElementTypeOrSelf(c.getResult().getType());
          if (!isa<BFloat16Type, Float16Type>(to))
            continue;
          mixed |= low && low != to;
          low = to;
          casts.push_back(c);
        }
      Value updated = updatedValue(param);
      if (casts.empty() || mixed || !updated ||
          terminator->getOperand(*a.updatedBy) != updated)
        continue;
      std::string name = ("amp.shadow." + a.name).str();
      if (!names.insert(name).second)
        return fn->emitError() << "tg-shadow-weights: the step already has "
                                  "an argument named '"
                               << name << "'";

      auto shadowType = RankedTensorType::get(type.getShape(), low);
      Location loc = NameLoc::get(StringAttr::get(ctx, name), param.getLoc());
      unsigned n = fn.getNumArguments();
      auto attrs = DictionaryAttr::get(
          ctx, {NamedAttribute(TGDialect::kStateAttr,
                               StringAttr::get(ctx, name)),
                NamedAttribute(TGDialect::kShadowOfAttr,
                               StringAttr::get(ctx, a.name))});
      if (failed(fn.insertArgument(n, shadowType, attrs, loc)))
        return failure();
      Value shadow = body.getArgument(n);
      for (CastOp c : casts) {
        c.getResult().replaceAllUsesWith(shadow);
        c->erase();
        ++numCastsReplaced;
      }

      OpBuilder b(updated.getDefiningOp()->getBlock(),
                  std::next(updated.getDefiningOp()->getIterator()));
      Value next = CastOp::create(b, loc, shadowType, updated);
      unsigned r = fn.getNumResults();
      if (failed(fn.insertResult(
              r, shadowType,
              DictionaryAttr::get(
                  ctx, {NamedAttribute(TGDialect::kUpdateAttr,
                                       StringAttr::get(ctx, name))}))))
        return failure();
      terminator->insertOperands(terminator->getNumOperands(), next);
      ++numShadows;
    }
    return success();
  }
};

} // namespace
