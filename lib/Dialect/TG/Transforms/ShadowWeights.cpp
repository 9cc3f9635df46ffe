//===- ShadowWeights.cpp - the tg-shadow-weights pass ---------------------===//
//
// Gives each f32 master weight that a mixed-precision step casts to f16 or
// bf16 a shadow: a state argument holding the weight already rounded, read
// where the casts were, and refreshed by a cast of the updated weight that
// the lowering fuses into the optimizer update. The step stops reading its
// master weights once more per step to cast them. With report=<file>, the
// outcome for every parameter is written as JSON.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mp/Dialect/TG/IR/TGOps.h"
#include "mp/Dialect/TG/IR/TrainStep.h"
#include "mp/Dialect/TG/Transforms/PrecisionPolicy.h"
#include "mp/Support/Json.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ScopedPrinter.h"

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
    // A pass manager may run this instance again.
    decisions = llvm::json::Array();
    keptSteps = llvm::json::Array();
    shadowCount = castsReplaced = 0;
    SmallVector<FunctionOpInterface> steps;
    // A step that is called keeps its signature.
    getOperation().walk([&](FunctionOpInterface fn) {
      if (!isTrainStep(fn) || fn.isExternal())
        return;
      if (SymbolTable::symbolKnownUseEmpty(fn, getOperation()))
        steps.push_back(fn);
      else if (!reportFile.empty())
        keptSteps.push_back(llvm::json::Object{
            {"function", fn.getName().str()},
            {"reason", "it is called, so its signature stays"}});
    });
    for (FunctionOpInterface fn : steps)
      if (failed(shadow(fn)))
        return signalPassFailure();
    if (!reportFile.empty() && failed(writeReport()))
      return signalPassFailure();
  }

private:
  /// A parameter that gets a shadow.
  struct Shadow {
    /// The parameter's name (in the signature's attributes) and its
    /// shadow's.
    StringRef param;
    std::string name;
    RankedTensorType type;
    Location loc;
    SmallVector<CastOp> casts;
    /// The parameter's new value.
    Value updated;
    /// Its entry in the report, or -1.
    int64_t entry;
  };

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

    // The shadows, decided before the signature changes.
    SmallVector<Shadow> shadows;
    unsigned params = sig->arguments.size();
    for (unsigned k = 0; k < params; ++k) {
      const StepArgument &a = sig->arguments[k];
      // (A step's signature gives every parameter its update.)
      if (a.role != ArgRole::Param || !a.updatedBy)
        continue;
      Value param = body.getArgument(k);
      auto type = cast<RankedTensorType>(param.getType());
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
      StringRef reason;
      if (!type.getElementType().isF32())
        reason = "only f32 master weights get a shadow";
      else if (casts.empty())
        reason = "the step never casts it to f16 or bf16";
      else if (mixed)
        reason = "the step casts it to both f16 and bf16";
      else if (!updated)
        reason = "no single tg.sgd_update or tg.adam_update updates it";
      else if (terminator->getOperand(*a.updatedBy) != updated)
        reason = "the step returns another value than its optimizer "
                 "update's as its new value";
      if (!reportFile.empty()) {
        llvm::json::Object entry{
            {"function", fn.getName().str()},
            {"param", a.name.str()},
            {"location", getReportLocation(param.getLoc())},
            {"type", llvm::to_string(type)},
            {"shadowed", reason.empty()}};
        if (!reason.empty())
          entry["reason"] = reason.str();
        else
          entry["update"] =
              updated.getDefiningOp()->getName().getStringRef().str();
        decisions.push_back(std::move(entry));
      }
      if (!reason.empty())
        continue;
      std::string name = ("amp.shadow." + a.name).str();
      if (!names.insert(name).second)
        return fn->emitError() << "tg-shadow-weights: the step already has "
                                  "an argument named '"
                               << name << "'";
      Location loc = NameLoc::get(StringAttr::get(ctx, name), param.getLoc());
      shadows.push_back(
          {a.name, std::move(name), RankedTensorType::get(type.getShape(), low),
           loc, std::move(casts), updated,
           reportFile.empty() ? -1 : int64_t(decisions.size()) - 1});
    }
    if (shadows.empty())
      return success();

    // All the arguments and results at once: one at a time, each insertion
    // would rebuild the signature and its attribute arrays, quadratic in the
    // parameters (445 MB for 1432, more than 24 GiB for 14296).
    SmallVector<Type> types;
    SmallVector<DictionaryAttr> argAttrs, resultAttrs;
    SmallVector<Location> locs;
    for (const Shadow &s : shadows) {
      StringAttr name = StringAttr::get(ctx, s.name);
      types.push_back(s.type);
      locs.push_back(s.loc);
      argAttrs.push_back(DictionaryAttr::get(
          ctx, {NamedAttribute(TGDialect::kStateAttr, name),
                NamedAttribute(TGDialect::kShadowOfAttr,
                               StringAttr::get(ctx, s.param))}));
      resultAttrs.push_back(DictionaryAttr::get(
          ctx, {NamedAttribute(TGDialect::kUpdateAttr, name)}));
    }
    unsigned firstArg = fn.getNumArguments();
    SmallVector<unsigned> argIndices(shadows.size(), firstArg);
    SmallVector<unsigned> resultIndices(shadows.size(), fn.getNumResults());
    if (failed(fn.insertArguments(argIndices, types, argAttrs, locs)) ||
        failed(fn.insertResults(resultIndices, types, resultAttrs)))
      return failure();

    SmallVector<Value> nexts;
    for (auto [i, s] : llvm::enumerate(shadows)) {
      Value shadow = body.getArgument(firstArg + i);
      for (CastOp c : s.casts) {
        c.getResult().replaceAllUsesWith(shadow);
        c->erase();
        ++numCastsReplaced;
      }
      Operation *update = s.updated.getDefiningOp();
      OpBuilder b(update->getBlock(), std::next(update->getIterator()));
      nexts.push_back(CastOp::create(b, s.loc, s.type, s.updated));
      ++numShadows;
      ++shadowCount;
      castsReplaced += s.casts.size();
      if (s.entry >= 0) {
        llvm::json::Object &entry = *decisions[s.entry].getAsObject();
        entry["shadow"] = s.name;
        entry["shadow_type"] = llvm::to_string(s.type);
        entry["casts_replaced"] = int64_t(s.casts.size());
      }
    }
    terminator->insertOperands(terminator->getNumOperands(), nexts);
    return success();
  }

  /// One entry per parameter of every step the pass rewrites, and one per
  /// step it leaves as it is (the statistics are compiled out of release
  /// builds of LLVM, so the report counts for itself).
  llvm::json::Array decisions, keptSteps;
  int64_t shadowCount = 0, castsReplaced = 0;

  LogicalResult writeReport() {
    llvm::json::Object report{{"params", int64_t(decisions.size())},
                              {"shadows", shadowCount},
                              {"casts_replaced", castsReplaced},
                              {"decisions", std::move(decisions)},
                              {"steps_kept", std::move(keptSteps)}};
    if (llvm::Error e =
            writeJsonFile(reportFile, llvm::json::Value(std::move(report))))
      return getOperation()->emitError()
             << "tg-shadow-weights: report: " << llvm::toString(std::move(e));
    return success();
  }
};

} // namespace
