//===- CheckNumerics.cpp - the tg-check-numerics pass ---------------------===//
//
// Instruments a training step so that it finds, on the device, the first op
// that produced an infinity or a NaN. Every watched value gets a
// `tg.tensor_stats` right after its definition; a chain of
// `tg.record_nonfinite` in program order keeps the id of the first checked
// op with a non-finite result; both the chain's end and all statistics rows
// become outputs of the step. The `tg.numerics` attribute maps op ids and
// rows back to names, locations and types, so a runner can explain a bad
// step without the IR.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mp/Dialect/TG/IR/TGOps.h"
#include "mp/Dialect/TG/IR/TrainStep.h"
#include "mp/Dialect/TG/Transforms/PrecisionPolicy.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/GlobPattern.h"

namespace mp::tg {
#define GEN_PASS_DEF_TGCHECKNUMERICS
#include "mp/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mp::tg

using namespace mlir;
using namespace mp::tg;

namespace {

enum class Scope { All, Forward, Backward };

/// The first file:line:col inside `loc`, printed; empty when there is none.
std::string getSourceLocation(Location loc) {
  std::string result;
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      result = (file.getFilename().getValue() + ":" + Twine(file.getLine()) +
                ":" + Twine(file.getColumn()))
                   .str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return result;
}

bool isFloatTensor(Value v) {
  return isa<FloatType>(getElementTypeOrSelf(v.getType()));
}

/// The ops downstream of a loss seed: every op implementing
/// LossGradientOpInterface and every op that uses a result of one of them,
/// transitively.
DenseSet<Operation *> findGradientOps(Block &body) {
  DenseSet<Operation *> gradient;
  for (Operation &op : body.without_terminator()) {
    bool downstream = isa<LossGradientOpInterface>(op) ||
                      llvm::any_of(op.getOperands(), [&](Value v) {
                        Operation *def = v.getDefiningOp();
                        return def && gradient.contains(def);
                      });
    if (downstream)
      gradient.insert(&op);
  }
  return gradient;
}

struct TGCheckNumericsPass
    : public mp::tg::impl::TGCheckNumericsBase<TGCheckNumericsPass> {
  using Base::Base;

  LogicalResult parseOptions(Scope &parsedScope,
                             SmallVectorImpl<llvm::GlobPattern> &globs) {
    auto err = [&]() -> InFlightDiagnostic {
      return getOperation().emitError() << "tg-check-numerics: ";
    };
    std::optional<Scope> s = llvm::StringSwitch<std::optional<Scope>>(scope)
                                 .Case("all", Scope::All)
                                 .Case("forward", Scope::Forward)
                                 .Case("backward", Scope::Backward)
                                 .Default(std::nullopt);
    if (!s)
      return err() << "invalid scope '" << scope
                   << "'; expected all, forward or backward";
    parsedScope = *s;
    for (const std::string &pattern : ops) {
      if (pattern.empty())
        return err() << "an empty pattern in 'ops'";
      llvm::Expected<llvm::GlobPattern> glob =
          llvm::GlobPattern::create(pattern);
      if (!glob)
        return err() << "invalid pattern '" << pattern
                     << "' in 'ops': " << llvm::toString(glob.takeError());
      globs.push_back(std::move(*glob));
    }
    return success();
  }

  void instrument(FunctionOpInterface fn, Scope s,
                  ArrayRef<llvm::GlobPattern> globs) {
    MLIRContext *ctx = &getContext();
    Block &body = fn.getFunctionBody().front();
    Operation *terminator = body.getTerminator();
    DenseSet<Operation *> gradient = findGradientOps(body);

    // The ops to check, in program order.
    SmallVector<std::pair<int64_t, Operation *>> checked;
    for (auto [id, op] : llvm::enumerate(body.without_terminator())) {
      if (isa<ConstantOp>(op) || llvm::none_of(op.getResults(), isFloatTensor))
        continue;
      bool isGradient = gradient.contains(&op);
      if ((s == Scope::Forward && isGradient) ||
          (s == Scope::Backward && !isGradient))
        continue;
      if (!globs.empty()) {
        std::string name = getLocationName(op.getLoc());
        StringRef kind = op.getName().getStringRef();
        if (llvm::none_of(globs, [&](const llvm::GlobPattern &g) {
              return g.match(name) || g.match(kind);
            }))
          continue;
      }
      checked.push_back({int64_t(id), &op});
    }
    if (checked.empty()) {
      fn.emitWarning() << "tg-check-numerics: no op of '" << fn.getName()
                       << "' is selected (scope=" << scope
                       << (ops.empty() ? "" : ", ops=") << llvm::join(ops, ",")
                       << "); the step is left unchanged";
      return;
    }

    // One row of statistics per watched value, created right after its
    // definition (at the start of the body for arguments).
    OpBuilder b(ctx);
    Type rowType = RankedTensorType::get({1, 6}, Float32Type::get(ctx));
    llvm::MapVector<Value, Value> rows;
    auto rowOf = [&](Value v) -> int64_t {
      if (!isFloatTensor(v))
        return -1;
      auto [it, inserted] = rows.try_emplace(v, Value());
      if (inserted) {
        OpBuilder::InsertionGuard guard(b);
        if (Operation *def = v.getDefiningOp())
          b.setInsertionPointAfter(def);
        else
          b.setInsertionPointToStart(&body);
        it->second = TensorStatsOp::create(b, v.getLoc(), rowType, v);
      }
      return it - rows.begin();
    };

    Type counter = RankedTensorType::get({}, IntegerType::get(ctx, 64));
    Location fnLoc = fn.getLoc();
    b.setInsertionPointToStart(&body);
    Value status = ConstantOp::create(
        b, NameLoc::get(StringAttr::get(ctx, "numerics.none"), fnLoc), counter,
        DenseElementsAttr::get(cast<ShapedType>(counter), int64_t(-1)));

    SmallVector<Attribute> table;
    for (auto [id, op] : checked) {
      auto typesAndRows = [&](ValueRange values, StringRef typesKey,
                              StringRef rowsKey,
                              SmallVectorImpl<NamedAttribute> &into) {
        SmallVector<Attribute> types, rowIds;
        for (Value v : values) {
          types.push_back(TypeAttr::get(getElementTypeOrSelf(v.getType())));
          rowIds.push_back(b.getI64IntegerAttr(rowOf(v)));
        }
        into.push_back(b.getNamedAttr(typesKey, b.getArrayAttr(types)));
        into.push_back(b.getNamedAttr(rowsKey, b.getArrayAttr(rowIds)));
      };
      SmallVector<NamedAttribute> entry;
      typesAndRows(op->getOperands(), "operand_types", "operand_rows", entry);
      typesAndRows(op->getResults(), "result_types", "result_rows", entry);

      // The status after this op: after the statistics of its results.
      SmallVector<Value> resultRows;
      Operation *last = op;
      for (Value r : op->getResults()) {
        if (!isFloatTensor(r))
          continue;
        resultRows.push_back(rows.lookup(r));
        Operation *statsOp = resultRows.back().getDefiningOp();
        if (last->isBeforeInBlock(statsOp))
          last = statsOp;
      }
      b.setInsertionPointAfter(last);
      status = RecordNonfiniteOp::create(b, op->getLoc(), counter, status,
                                         resultRows, b.getI64IntegerAttr(id));

      // Pinning to f32 happens through the policy, which matches precision
      // ops by name; a cast is kept out of low precision by pinning the ops
      // that read it.
      SmallVector<Attribute> pin;
      auto addPin = [&](Operation *target) {
        if (!isa<PrecisionOpInterface>(target))
          return;
        StringAttr name = b.getStringAttr(getLocationName(target->getLoc()));
        if (!llvm::is_contained(pin, name))
          pin.push_back(name);
      };
      if (isa<CastOp>(op)) {
        for (Operation *user : op->getUsers())
          addPin(user);
      } else {
        addPin(op);
      }
      entry.push_back(b.getNamedAttr("id", b.getI64IntegerAttr(id)));
      entry.push_back(b.getNamedAttr(
          "name", b.getStringAttr(getLocationName(op->getLoc()))));
      entry.push_back(
          b.getNamedAttr("op", b.getStringAttr(op->getName().getStringRef())));
      entry.push_back(b.getNamedAttr(
          "location", b.getStringAttr(getSourceLocation(op->getLoc()))));
      if (auto p = dyn_cast<PrecisionOpInterface>(op))
        if (Type compute = p.getComputeType())
          entry.push_back(b.getNamedAttr("compute", TypeAttr::get(compute)));
      entry.push_back(
          b.getNamedAttr("gradient", b.getBoolAttr(gradient.contains(op))));
      entry.push_back(b.getNamedAttr("pin", b.getArrayAttr(pin)));
      table.push_back(b.getDictionaryAttr(entry));
    }

    // The outputs: the first bad op and every row of this step.
    b.setInsertionPoint(terminator);
    SmallVector<Value> allRows;
    for (auto &entry : rows)
      allRows.push_back(entry.second);
    if (allRows.empty())
      llvm_unreachable("every checked op has a float tensor result");
    Value stats = allRows.front();
    if (allRows.size() > 1)
      stats = ConcatOp::create(
          b, NameLoc::get(StringAttr::get(ctx, "numerics.stats"), fnLoc),
          allRows, b.getI64IntegerAttr(0));
    unsigned r = fn.getNumResults();
    auto output = [&](StringRef name) {
      return DictionaryAttr::get(
          ctx,
          {NamedAttribute(TGDialect::kOutputAttr, StringAttr::get(ctx, name))});
    };
    if (failed(fn.insertResult(r, status.getType(),
                               output("numerics.first_nonfinite"))) ||
        failed(
            fn.insertResult(r + 1, stats.getType(), output("numerics.stats"))))
      return signalPassFailure();
    terminator->insertOperands(terminator->getNumOperands(), {status, stats});
    fn->setAttr(TGDialect::kNumericsAttr, b.getArrayAttr(table));
  }

  void runOnOperation() override {
    Scope s = Scope::All;
    SmallVector<llvm::GlobPattern> globs;
    if (failed(parseOptions(s, globs)))
      return signalPassFailure();
    SmallVector<FunctionOpInterface> steps;
    getOperation().walk([&](FunctionOpInterface fn) {
      if (isTrainStep(fn) && !fn.isExternal())
        steps.push_back(fn);
    });
    for (FunctionOpInterface fn : steps) {
      if (fn->hasAttr(TGDialect::kNumericsAttr)) {
        fn.emitRemark("tg-check-numerics: step is already checked");
        continue;
      }
      if (!fn.getFunctionBody().hasOneBlock()) {
        fn.emitError("tg-check-numerics: a training step has one block");
        return signalPassFailure();
      }
      instrument(fn, s, globs);
    }
  }
};

} // namespace
